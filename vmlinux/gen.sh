#!/bin/sh
# Regenerates vmlinux/<arch>/vmlinux.h from the running kernel's BTF and
# records the kernel it came from, so CO-RE builds do not need kernel headers.
set -eu
arch=${1:-x86}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/$arch"
bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$here/$arch/vmlinux.h.tmp"
mv "$here/$arch/vmlinux.h.tmp" "$here/$arch/vmlinux.h"
uname -r > "$here/$arch/KERNEL_VERSION"
echo "vmlinux/$arch/vmlinux.h from $(uname -r)"
