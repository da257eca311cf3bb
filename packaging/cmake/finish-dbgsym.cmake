# finish-dbgsym.cmake - CPACK_POST_BUILD_SCRIPTS: completes the -dbgsym packages CPack
# (3.25) makes with CPACK_DEBIAN_DEBUGINFO_PACKAGE, as dh_strip would have made them:
#  - CPack writes their md5sums with the absolute paths of its staging tree instead of
#    the paths in the package (lintian: md5sums-lists-nonexistent-file);
#  - they have no /usr/share/doc/<pkg>-dbgsym; Debian's dbgsym packages carry it as a
#    symlink to the doc directory of the package they depend on (copyright, changelog).
# Each .ddeb is unpacked with dpkg-deb -R, fixed and packed again (root-owned files).
find_program(_dpkg_deb dpkg-deb REQUIRED)
foreach(_pkg IN LISTS CPACK_PACKAGE_FILES)
  if(NOT _pkg MATCHES "\\.ddeb$")
    continue()
  endif()
  set(_tree ${CPACK_TOPLEVEL_DIRECTORY}/finish-dbgsym)
  file(REMOVE_RECURSE ${_tree})
  execute_process(COMMAND ${_dpkg_deb} -R ${_pkg} ${_tree} COMMAND_ERROR_IS_FATAL ANY)
  execute_process(COMMAND ${_dpkg_deb} -f ${_pkg} Package Depends
                  OUTPUT_VARIABLE _fields COMMAND_ERROR_IS_FATAL ANY)
  string(REGEX MATCH "Package: ([^\n]+)" _ ${_fields})
  set(_name ${CMAKE_MATCH_1})
  string(REGEX MATCH "Depends: ([^ \n]+)" _ ${_fields})
  set(_parent ${CMAKE_MATCH_1})
  file(MAKE_DIRECTORY ${_tree}/usr/share/doc)
  file(CREATE_LINK ${_parent} ${_tree}/usr/share/doc/${_name} SYMBOLIC)
  # md5sums: "<md5>  <path below the root>", regular files only (not the symlink)
  file(GLOB_RECURSE _files LIST_DIRECTORIES false RELATIVE ${_tree} ${_tree}/usr/*)
  list(SORT _files)
  set(_sums "")
  foreach(_f IN LISTS _files)
    if(NOT IS_SYMLINK ${_tree}/${_f})
      file(MD5 ${_tree}/${_f} _md5)
      string(APPEND _sums "${_md5}  ${_f}\n")
    endif()
  endforeach()
  file(WRITE ${_tree}/DEBIAN/md5sums "${_sums}")
  file(CHMOD ${_tree}/DEBIAN/md5sums PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
  execute_process(COMMAND ${_dpkg_deb} --root-owner-group -Zxz --build ${_tree} ${_pkg}
                  OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
  file(REMOVE_RECURSE ${_tree})
  message(STATUS "finish-dbgsym: ${_pkg}: md5sums rewritten, usr/share/doc/${_name} -> ${_parent}")
endforeach()
