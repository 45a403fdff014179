#!/usr/bin/env python3
"""Prints where, relative to the install prefix given, the Python that
runs it looks for pure-Python packages, for python/meson.build.

Debian's Python searches /usr/local/lib/python3.X/dist-packages (its
scheme posix_local, whose base is /usr) and /usr/lib/python3/dist-packages
(deb_system, the distribution's own); the lib/python3/dist-packages that
Meson gives it under /usr/local is on no sys.path. Elsewhere the scheme
posix_prefix says.

Usage: python-purelib.py PREFIX
"""
import os
import sys
import sysconfig


def purelib(prefix):
    schemes = sysconfig.get_scheme_names()
    if "posix_local" in schemes and "deb_system" in schemes:
        if prefix == "/usr":
            path = sysconfig.get_path("purelib", "deb_system",
                                      vars={"base": "/usr"})
            return os.path.relpath(path, "/usr")
        path = sysconfig.get_path("purelib", "posix_local",
                                  vars={"base": "/usr"})
        return os.path.relpath(path, "/usr/local")
    bases = {k: prefix for k in
             ("base", "platbase", "installed_base", "installed_platbase")}
    path = sysconfig.get_path("purelib", "posix_prefix", vars=bases)
    return os.path.relpath(path, prefix)


if __name__ == "__main__":
    print(purelib(os.path.normpath(sys.argv[1])))
