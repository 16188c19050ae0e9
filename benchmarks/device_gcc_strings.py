"""What this machine's gcc drivers print of their version, and what gpudoctor reads of it from the binaries
(formats/compilers.gcc_version_in_binary), with the candidate strings when they differ."""
import glob
import os
import re
import subprocess

from gpudoctor.formats.compilers import _GCC_STRINGS, _PKG_STRING, _VERSION_STRING, gcc_version_in_binary

for path in sorted(set(glob.glob("/usr/bin/gcc*") + glob.glob("/usr/bin/g++*") + glob.glob("/usr/bin/x86_64-linux-gnu-g*-[0-9]*"))):
    real = os.path.realpath(path)
    if not os.path.isfile(real) or os.path.getsize(real) > (64 << 20):
        continue
    printed = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    data = open(real, "rb").read()
    read = gcc_version_in_binary(data)
    print(f"{path} -> {real}: prints {printed} ; read {read}")
    if not read or (printed and read["version"] not in printed[0]):
        print("   adjacent:", sorted({(m.group(1), m.group(2)) for m in _GCC_STRINGS.finditer(data)})[:5])
        print("   pkg strings:", sorted({m.group(1) for m in _PKG_STRING.finditer(data)})[:5])
        print("   versions:", sorted({m.group(1) for m in _VERSION_STRING.finditer(data)})[:10])
        for m in list(re.finditer(rb"\(Ubuntu[^\x00]{0,60}", data))[:3]:
            print("   around:", data[max(0, m.start() - 48):m.end() + 16])
