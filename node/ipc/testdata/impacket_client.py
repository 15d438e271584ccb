#!/usr/bin/python3
"""Drive node/ipc pipes with impacket's DCE/RPC client, a decoder nobody in
this project wrote.

  impacket_client.py dump
      Print, one per line as "name hex", the PDUs impacket sends for a srvsvc
      BIND and for NetrShareEnum levels 1 and 2 (built offline, no network).
      Their output is checked in as impacket_requests.txt.

  impacket_client.py live MODE
      Run impacket's DCERPC_v5 over a transport that is this process's stdio:
      each PDU impacket sends is written as "W <hex>", each receive is asked
      for with "R" and answered by one line of hex on stdin. The Go test
      feeds those PDUs to an ipc.Pipe. At the end one line "RESULT <json>"
      carries what impacket decoded. MODE is srvsvc, wkssvc, ndr64 or wrongif.

Exit status 3 means impacket is not installed.
"""
import binascii
import json
import sys

try:
    from impacket.dcerpc.v5 import rpcrt, srvs, wkst
    from impacket.dcerpc.v5.rpcrt import DCERPC_v5, DCERPCException
    from impacket.dcerpc.v5.transport import DCERPCTransport
    from impacket.dcerpc.v5.dtypes import NULL
    from impacket.uuid import uuidtup_to_bin
except ImportError:
    sys.exit(3)

NDR = ('8a885d04-1ceb-11c9-9fe8-08002b104860', '2.0')
NDR64 = ('71710533-beba-4937-8319-b5dbef9ccc36', '1.0')


def bind_pdu(iface, call_id):
    bind = rpcrt.MSRPCBind()
    item = rpcrt.CtxItem()
    item['AbstractSyntax'] = iface
    item['TransferSyntax'] = uuidtup_to_bin(NDR)
    item['ContextID'] = 0
    item['TransItems'] = 1
    bind.addCtxItem(item)
    pkt = rpcrt.MSRPCHeader()
    pkt['type'] = rpcrt.MSRPC_BIND
    pkt['pduData'] = bind.getData()
    pkt['call_id'] = call_id
    return pkt.get_packet()


def request_pdu(req, call_id):
    call = rpcrt.DCERPC_RawCall(req.opnum, req.getData())
    call['ctx_id'] = 0
    call['call_id'] = call_id
    call['alloc_hint'] = len(call['pduData'])
    return call.get_packet()


def share_enum_request(level):
    req = srvs.NetrShareEnum()
    req['ServerName'] = '\x00'
    req['PreferedMaximumLength'] = 0xffffffff
    req['ResumeHandle'] = 0
    req['InfoStruct']['Level'] = level
    req['InfoStruct']['ShareInfo']['tag'] = level
    req['InfoStruct']['ShareInfo']['Level%d' % level]['Buffer'] = NULL
    return req


def dump():
    out = [
        ('bind', bind_pdu(srvs.MSRPC_UUID_SRVS, 1)),
        ('share_enum_1', request_pdu(share_enum_request(1), 2)),
        ('share_enum_2', request_pdu(share_enum_request(2), 3)),
    ]
    for name, pdu in out:
        print(name, binascii.hexlify(pdu).decode())


class StdioTransport(DCERPCTransport):
    """A DCERPCTransport whose peer is the Go test on the other end of stdio."""

    def __init__(self):
        DCERPCTransport.__init__(self, 'pipe', 0)

    def connect(self):
        return 1

    def disconnect(self):
        return 1

    def send(self, data, forceWriteAndx=0, forceRecv=0):
        sys.stdout.write('W %s\n' % binascii.hexlify(data).decode())
        sys.stdout.flush()

    def recv(self, forceRecv=0, count=0):
        sys.stdout.write('R\n')
        sys.stdout.flush()
        line = sys.stdin.readline().strip()
        if not line:
            raise DCERPCException('pipe empty')
        return binascii.unhexlify(line)


def s(v):
    """An impacket string field as Python text, without the NUL."""
    if v is None or (isinstance(v, (bytes, bytearray)) and len(v) == 0):
        return None  # impacket's NULL pointer
    return str(v).rstrip('\x00')


def share_entry(e):
    d = {}
    for field, _ in e.structure:
        v = e[field]
        key = field.split('_', 1)[1]
        if isinstance(v, int):
            d[key] = v
        else:
            d[key] = s(v)
    return d


def error_code(f):
    try:
        f()
    except DCERPCException as e:
        code = e.get_error_code()
        return code if code is not None else str(e)
    return 0


def live_srvsvc(dce, res):
    dce.bind(srvs.MSRPC_UUID_SRVS)
    for level in (0, 1, 2, 501, 502):
        r = srvs.hNetrShareEnum(dce, level)
        ctr = r['InfoStruct']['ShareInfo']['Level%d' % level]
        res['enum%d' % level] = [share_entry(e) for e in ctr['Buffer']]
        res['enum%d_total' % level] = r['TotalEntries']
        res['enum%d_count' % level] = ctr['EntriesRead']
    r = srvs.hNetrShareEnumSticky(dce, 1)
    res['sticky1'] = [share_entry(e) for e in r['InfoStruct']['ShareInfo']['Level1']['Buffer']]
    for level in (0, 1, 2, 501, 502, 1005):
        r = srvs.hNetrShareGetInfo(dce, 'DATA\x00', level)
        res['get%d' % level] = share_entry(r['InfoStruct']['ShareInfo%d' % level])
    res['get_missing'] = error_code(lambda: srvs.hNetrShareGetInfo(dce, 'nosuch\x00', 1))
    res['get_badlevel'] = error_code(lambda: srvs.hNetrShareGetInfo(dce, 'data\x00', 503))
    for level in (100, 101, 102):
        r = srvs.hNetrServerGetInfo(dce, level)
        res['server%d' % level] = share_entry(r['InfoStruct']['ServerInfo%d' % level])
    res['server_badlevel'] = error_code(lambda: srvs.hNetrServerGetInfo(dce, 503))
    res['session_enum'] = error_code(lambda: srvs.hNetrSessionEnum(dce, NULL, NULL, 10))
    res['bad_opnum'] = error_code(lambda: (dce.call(200, b''), dce.recv()))
    # Fragmented requests: 16-byte fragments, reassembled by the server.
    dce.set_max_fragment_size(16)
    r = srvs.hNetrShareGetInfo(dce, 'data\x00', 1)
    res['fragmented_get1'] = share_entry(r['InfoStruct']['ShareInfo1'])
    dce.set_max_fragment_size(0)


def live(mode):
    dce = DCERPC_v5(StdioTransport())
    res = {}
    try:
        if mode == 'srvsvc':
            live_srvsvc(dce, res)
        elif mode == 'wkssvc':
            dce.bind(wkst.MSRPC_UUID_WKST)
            r = wkst.hNetrWkstaGetInfo(dce, 100)
            res['wksta100'] = share_entry(r['WkstaInfo']['WkstaInfo100'])
            res['wksta_badlevel'] = error_code(lambda: wkst.hNetrWkstaGetInfo(dce, 101))
        elif mode == 'ndr64':
            res['bind'] = error_code(lambda: dce.bind(srvs.MSRPC_UUID_SRVS, transfer_syntax=NDR64))
        elif mode == 'wrongif':
            res['bind'] = error_code(lambda: dce.bind(wkst.MSRPC_UUID_WKST))
    except Exception as e:  # report, do not hide, anything unexpected
        res['exception'] = '%s: %s' % (type(e).__name__, e)
    sys.stdout.write('RESULT %s\n' % json.dumps(res, sort_keys=True))
    sys.stdout.flush()


if __name__ == '__main__':
    if sys.argv[1:] == ['dump']:
        dump()
    elif len(sys.argv) == 3 and sys.argv[1] == 'live':
        live(sys.argv[2])
    else:
        sys.exit('usage: impacket_client.py dump | live MODE')
