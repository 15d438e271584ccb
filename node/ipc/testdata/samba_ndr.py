#!/usr/bin/python3
"""Encode requests and decode responses with Samba's PIDL-generated NDR
(python3-samba), the code smbclient and rpcclient run.

  samba_ndr.py requests
      Print "name opnum hex" lines: the [in] stub data Samba's client sends
      for NetShareEnumAll (levels 1 and 502), NetShareGetInfo (1 and 1005),
      NetSrvGetInfo (101) and wkssvc NetWkstaGetInfo (100).

  samba_ndr.py decode
      Read "name hex" lines of [out] stub data from stdin and print one JSON
      object with what Samba decoded from each.

Exit status 3 means the Samba Python bindings are not installed.
"""
import json
import sys

try:
    from samba.dcerpc import srvsvc, wkssvc
    from samba.ndr import ndr_pack_in, ndr_unpack_out
except ImportError:
    sys.exit(3)


def share_enum_all(level):
    f = srvsvc.NetShareEnumAll()
    f.in_server_unc = '\\\\SMBCLUSTER'
    ctr = srvsvc.NetShareInfoCtr()
    ctr.level = level
    ctr.ctr = getattr(srvsvc, 'NetShareCtr%d' % level)()
    f.in_info_ctr = ctr
    f.in_max_buffer = 0xffffffff
    f.in_resume_handle = 0
    return f


def share_get_info(level):
    f = srvsvc.NetShareGetInfo()
    f.in_server_unc = '\\\\SMBCLUSTER'
    f.in_share_name = 'data'
    f.in_level = level
    return f


def srv_get_info(level):
    f = srvsvc.NetSrvGetInfo()
    f.in_server_unc = '\\\\SMBCLUSTER'
    f.in_level = level
    return f


def wksta_get_info(level):
    f = wkssvc.NetWkstaGetInfo()
    f.in_server_name = '\\\\SMBCLUSTER'
    f.in_level = level
    return f


CALLS = {
    'share_enum_all_1': lambda: share_enum_all(1),
    'share_enum_all_502': lambda: share_enum_all(502),
    'share_get_info_1': lambda: share_get_info(1),
    'share_get_info_1005': lambda: share_get_info(1005),
    'srv_get_info_101': lambda: srv_get_info(101),
    'wksta_get_info_100': lambda: wksta_get_info(100),
}

FIELDS = {
    srvsvc.NetShareInfo1: ('name', 'type', 'comment'),
    srvsvc.NetShareInfo502: ('name', 'type', 'comment', 'permissions', 'max_users',
                             'current_users', 'path', 'password'),
    srvsvc.NetShareInfo1005: ('dfs_flags',),
    srvsvc.NetSrvInfo101: ('platform_id', 'server_name', 'version_major', 'version_minor',
                           'server_type', 'comment'),
    wkssvc.NetWkstaInfo100: ('platform_id', 'server_name', 'domain_name', 'version_major',
                             'version_minor'),
}


def plain(v):
    return {f: getattr(v, f) for f in FIELDS[type(v)]}


def decoded(name, f):
    out = {'result': f.result if isinstance(f.result, int) else f.result[0]}
    if name.startswith('share_enum_all'):
        out['totalentries'] = f.out_totalentries
        out['shares'] = [plain(e) for e in f.out_info_ctr.ctr.array]
    elif name.startswith('wksta'):
        out['info'] = plain(f.out_info)
    else:
        out['info'] = plain(f.out_info)
    return out


def main():
    if sys.argv[1:] == ['requests']:
        for name, mk in CALLS.items():
            f = mk()
            print(name, f.opnum(), ndr_pack_in(f).hex())
    elif sys.argv[1:] == ['decode']:
        res = {}
        for line in sys.stdin:
            name, h = line.split()
            f = CALLS[name]()
            ndr_unpack_out(f, bytes.fromhex(h))
            res[name] = decoded(name, f)
        print(json.dumps(res, sort_keys=True))
    else:
        sys.exit('usage: samba_ndr.py requests | decode')


if __name__ == '__main__':
    main()
