#!/usr/bin/python3
"""Drive the witness interface with Samba's Python bindings.

usage: witness_client.py BINDING USER PASSWORD COMMAND [ARGS...]

Commands (one JSON object per line on stdout):
  list                              GetInterfaceList
  register NETNAME IP [V2] [TIMEOUT] register (RegisterEx with V2, keep-alive
                                    TIMEOUT seconds, 0 or none: an hour),
                                    then wait with AsyncNotify, printing each
                                    notification; "ready" once registered
  register-only NETNAME IP           register (V2, keep-alive an hour), print
                                    the handle, exit
  notify UUID [COUNT]               AsyncNotify COUNT times on a registration
                                    made elsewhere, then unregister
"""
import json
import sys

from samba import credentials, param
from samba.dcerpc import misc, witness

HOUR = 3600


def connect(binding, user, password):
    lp = param.LoadParm()
    lp.load_default()
    creds = credentials.Credentials()
    creds.guess(lp)
    creds.set_username(user)
    creds.set_password(password)
    creds.set_workstation("WITNESSTEST")
    return witness.witness(binding, lp, creds)


def out(**kw):
    print(json.dumps(kw), flush=True)


def main():
    binding, user, password, cmd = sys.argv[1:5]
    args = sys.argv[5:]
    c = connect(binding, user, password)
    if cmd == "list":
        l = c.GetInterfaceList()
        out(interfaces=[{"group": i.group_name, "state": i.state, "ipv4": i.ipv4,
                         "flags": i.flags, "version": i.version} for i in l.interfaces])
        return
    if cmd == "register-only":
        h = c.RegisterEx(witness.WITNESS_V2, args[0], None, args[1], "WITNESSTEST", 0, HOUR)
        out(handle=str(h.uuid))
        return
    if cmd == "notify":
        h = misc.policy_handle()
        h.handle_type = 0
        h.uuid = misc.GUID(args[0])
        notify(c, h, int(args[1]) if len(args) > 1 else 1)
        return
    if cmd == "register":
        net_name, ip = args[0], args[1]
        if len(args) > 2 and args[2] == "V2":
            timeout = int(args[3]) if len(args) > 3 else 0
            timeout = timeout or HOUR  # 0 would answer ERROR_TIMEOUT at once
            h = c.RegisterEx(witness.WITNESS_V2, net_name, None, ip, "WITNESSTEST",
                             witness.WITNESS_REGISTER_IP_NOTIFICATION, timeout)
        else:
            h = c.Register(witness.WITNESS_V1, net_name, ip, "WITNESSTEST")
        out(ready=True)
        notify(c, h, int(args[4]) if len(args) > 4 else 1)
        return
    raise SystemExit("unknown command " + cmd)


def notify(c, h, count):
    for _ in range(count):
        try:
            r = c.AsyncNotify(h)
        except Exception as e:  # WERR_TIMEOUT and friends raise
            out(error=str(e))
            return
        msgs = []
        for m in r.messages:
            if r.type == witness.WITNESS_NOTIFY_RESOURCE_CHANGE:
                msgs.append({"name": m.name, "state": m.type})
            else:
                msgs.append({"addrs": [{"ipv4": a.ipv4, "flags": a.flags} for a in m.addr]})
        out(type=r.type, messages=msgs)
    c.UnRegister(h)
    out(unregistered=True)


if __name__ == "__main__":
    main()
