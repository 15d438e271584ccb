#!/usr/bin/python3
"""Kerberos logon with impacket (-k): the service ticket from KRB5CCNAME.

Usage: impacket_kerberos.py ADDR PORT SERVERNAME SHARE USER REALM

Connects to ADDR:PORT under SERVERNAME (the ticket is for cifs/SERVERNAME),
logs on at SMB 3.0 with the ticket (no mutual authentication: the session
key is the ticket's), lists shares, writes a file, reads it back and
deletes it. Exits non-zero on the first mismatch.
"""

import io
import os
import sys

from impacket.smb3structs import SMB2_DIALECT_30
from impacket.smbconnection import SMBConnection


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    if len(sys.argv) != 7:
        print(__doc__)
        sys.exit(2)
    addr, port, name, share, user, realm = sys.argv[1:]
    conn = SMBConnection(name, addr, sess_port=int(port), preferredDialect=SMB2_DIALECT_30)
    conn.kerberosLogin(user, "", realm, useCache=True)
    print("kerberos login ok, dialect 0x%x, signing %s" % (conn.getDialect(), conn.isSigningRequired()))
    shares = [s["shi1_netname"][:-1] for s in conn.listShares()]
    if share not in shares:
        fail("share %s not in %s" % (share, shares))
    data = os.urandom(256 * 1024 + 7)
    conn.putFile(share, "impacket-krb.bin", io.BytesIO(data).read)
    back = io.BytesIO()
    conn.getFile(share, "impacket-krb.bin", back.write)
    if back.getvalue() != data:
        fail("read back %d bytes, not what was written" % len(back.getvalue()))
    conn.deleteFile(share, "impacket-krb.bin")
    conn.logoff()
    print("PASS")


if __name__ == "__main__":
    main()
