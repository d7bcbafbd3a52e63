#!/usr/bin/python3
"""ks_tcx.py IFNAME [egress] - the names of the programs at IFNAME's tcx
ingress (or egress), one per line (BPF_PROG_QUERY on BPF_TCX_INGRESS; Debian 12's bpftool 7.1
and iproute2 do not show tcx). Run it in the interface's namespace, as
root. Prints nothing when there are none or the kernel has no tcx.
"""
import ctypes
import os
import socket
import struct
import sys

SYS_BPF = 321  # x86_64
BPF_PROG_GET_FD_BY_ID, BPF_OBJ_GET_INFO_BY_FD, BPF_PROG_QUERY = 13, 15, 16
BPF_TCX_INGRESS, BPF_TCX_EGRESS = 46, 47
libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    return libc.syscall(SYS_BPF, cmd, buf, 128), buf


def prog_name(prog_id):
    fd, _ = bpf(BPF_PROG_GET_FD_BY_ID, struct.pack("=III", prog_id, 0, 0))
    if fd < 0:
        return "?"
    info = ctypes.create_string_buffer(256)
    rc, _ = bpf(BPF_OBJ_GET_INFO_BY_FD,
                struct.pack("=IIQ", fd, 256, ctypes.addressof(info)))
    os.close(fd)
    if rc < 0:
        return "?"
    return info.raw[64:80].split(b"\0")[0].decode()


def main():
    ifindex = socket.if_nametoindex(sys.argv[1])
    ids = (ctypes.c_uint32 * 64)()
    where = BPF_TCX_EGRESS if sys.argv[2:] == ["egress"] else BPF_TCX_INGRESS
    attr = struct.pack("=IIIIQII", ifindex, where, 0, 0,
                       ctypes.addressof(ids), 64, 0)
    rc, buf = bpf(BPF_PROG_QUERY, attr)
    if rc < 0:
        return 0
    cnt = struct.unpack_from("=I", buf.raw, 24)[0]
    for i in range(min(cnt, 64)):
        print(prog_name(ids[i]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
