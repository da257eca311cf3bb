"""Bring the loopback interface up in this (new, private) network namespace, as
`ip link set lo up` does, without iproute2 (Debian minbase has none): SIOCGIFFLAGS, then
SIOCSIFFLAGS with IFF_UP (linux/sockios.h, linux/if.h). Run by tools/test-distributed.sh
inside `unshare -n`."""
import fcntl
import socket
import struct

SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1

with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    name = b"lo"
    flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sH", name, 0))[:18])[1]
    fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH", name, flags | IFF_UP))
