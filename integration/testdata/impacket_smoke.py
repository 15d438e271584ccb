#!/usr/bin/python3
"""End-to-end smoke test of an SMB server with impacket.

Usage: impacket_smoke.py HOST PORT SHARE USER PASS

Logs in at SMB 3.0 (impacket 0.10 derives SMB 3.1.1 keys wrongly), lists
shares, writes, lists, reads back, deletes a file, and creates and deletes a
directory. Prints one line per step; exits non-zero on the first mismatch.
"""

import hashlib
import io
import os
import sys

from impacket.smb3structs import SMB2_DIALECT_30
from impacket.smbconnection import SMBConnection


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def names(conn, share, pattern):
    return {f.get_longname(): f for f in conn.listPath(share, pattern)}


def main():
    if len(sys.argv) != 6:
        print(__doc__)
        sys.exit(2)
    host, port, share, user, password = sys.argv[1:]
    conn = SMBConnection(host, host, sess_port=int(port), preferredDialect=SMB2_DIALECT_30)
    conn.login(user, password)
    print("login ok, dialect 0x%x" % conn.getDialect())

    shares = [s["shi1_netname"][:-1] for s in conn.listShares()]
    print("shares: %s" % shares)
    for want in (share, "IPC$"):
        if want not in shares:
            fail("share %s not in %s" % (want, shares))

    data = os.urandom(1024 * 1024 + 1)
    conn.putFile(share, "impacket.bin", io.BytesIO(data).read)
    listed = names(conn, share, "*")
    if "impacket.bin" not in listed:
        fail("impacket.bin not listed: %s" % sorted(listed))
    if listed["impacket.bin"].get_filesize() != len(data):
        fail("listed size %d, want %d" % (listed["impacket.bin"].get_filesize(), len(data)))
    print("put and list ok")

    out = io.BytesIO()
    conn.getFile(share, "impacket.bin", out.write)
    if hashlib.sha256(out.getvalue()).digest() != hashlib.sha256(data).digest():
        fail("read back %d bytes that differ from the %d written" % (len(out.getvalue()), len(data)))
    print("get ok")

    conn.deleteFile(share, "impacket.bin")
    if "impacket.bin" in names(conn, share, "*"):
        fail("impacket.bin still listed after deleteFile")
    print("delete ok")

    conn.createDirectory(share, "impacket_dir")
    listed = names(conn, share, "*")
    if "impacket_dir" not in listed or not listed["impacket_dir"].is_directory():
        fail("impacket_dir not listed as a directory: %s" % sorted(listed))
    conn.deleteDirectory(share, "impacket_dir")
    if "impacket_dir" in names(conn, share, "*"):
        fail("impacket_dir still listed after deleteDirectory")
    print("directory ok")

    conn.logoff()
    print("PASS")


if __name__ == "__main__":
    main()
