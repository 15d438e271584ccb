# bench/lib.sh — shared by run.sh and cold.sh (sourced, not run).
# The caller defines log and die. start_samba needs WORK (its state goes
# to $WORK/samba, the shares are $WORK/samba/share and shareenc),
# PORT_SAMBA, USER_NAME, PASS and SMBD (its path); it sets SAMBA_PID and
# SAMBA_USER. SAMBA_AIO_READ_SIZE (default 0: tmpfs reads
# are faster synchronous) tunes Samba's "aio read size".

# wait_port PORT: until something accepts on 127.0.0.1:PORT (10 s).
wait_port() {
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	return 1
}

start_samba() {
	local d=$WORK/samba conf=$WORK/samba/smb.conf env=() user=$USER_NAME
	mkdir -p "$d"/{lock,state,cache,pid,private,ncalrpc,binddns,log}
	local nss
	nss=$(ls /usr/lib/*/libnss_wrapper.so 2>/dev/null | head -1 || true)
	if [ -n "$nss" ]; then
		printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n%s:x:30001:30001:%s:/nonexistent:/bin/false\n' \
			"$user" "$user" >"$d/passwd"
		printf 'root:x:0:\nnogroup:x:65534:\n%s:x:30001:\n' "$user" >"$d/group"
		env=(LD_PRELOAD="$nss" NSS_WRAPPER_PASSWD="$d/passwd" NSS_WRAPPER_GROUP="$d/group")
	else
		user=root # no nss_wrapper: map the SMB user to the existing root account
	fi
	SAMBA_USER=$user
	cat >"$conf" <<CONF
[global]
	server role = standalone server
	smb ports = $PORT_SAMBA
	interfaces = 127.0.0.1
	bind interfaces only = yes
	disable netbios = yes
	server min protocol = SMB2_02
	server max protocol = SMB3_11
	server signing = auto
	map to guest = never
	load printers = no
	printcap name = /dev/null
	disable spoolss = yes
	usershare max shares = 0
	passdb backend = tdbsam:$d/private/passdb.tdb
	lock directory = $d/lock
	state directory = $d/state
	cache directory = $d/cache
	pid directory = $d/pid
	private dir = $d/private
	ncalrpc dir = $d/ncalrpc
	binddns dir = $d/binddns
	log file = $d/log/log.%m
	log level = 0
	kernel oplocks = no
	use sendfile = yes
	aio read size = ${SAMBA_AIO_READ_SIZE:-0}
	aio write size = 1
	strict sync = no
[bench]
	path = $d/share
	read only = no
	force user = root
[benchenc]
	path = $d/shareenc
	read only = no
	force user = root
	smb encrypt = required
CONF
	printf '%s\n%s\n' "$PASS" "$PASS" | env "${env[@]}" smbpasswd -c "$conf" -a -s "$user" >/dev/null
	# Its own process group (no --no-process-group): smbd signals its whole
	# group when it stops, which must not include this script.
	env "${env[@]}" "$SMBD" --foreground --debug-stdout --debuglevel=0 \
		--configfile="$conf" >"$d/smbd.log" 2>&1 &
	SAMBA_PID=$!
	wait_port "$PORT_SAMBA" || die "smbd did not start: $(tail -c 600 "$d/smbd.log")"
}

# cpu_ticks PID: user+system ticks of PID and all its descendants, plus the
# children they already reaped (cutime/cstime), so exited per-connection
# smbd children still count ([proc(5)] fields 14-17).
cpu_ticks() {
	{ cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v root="$1" '
	{
		pid = $1
		if (!match($0, /\) [A-Za-z] /)) next
		n = split(substr($0, RSTART + 2), f, " ")
		ppid[pid] = f[2]; t[pid] = f[12] + f[13] + f[14] + f[15]
	}
	END {
		tree[root] = 1
		do { grew = 0; for (p in ppid) if (!(p in tree) && (ppid[p] in tree)) { tree[p] = 1; grew = 1 } } while (grew)
		s = 0; for (p in tree) s += t[p]; print s
	}'
}
