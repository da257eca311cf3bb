module github.com/skycmd/libskycmd/bindings/go

go 1.22
