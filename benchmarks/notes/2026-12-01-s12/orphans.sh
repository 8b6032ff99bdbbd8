#!/usr/bin/env bash
# Does this machine let an orphaned process live on? Plain orphans, a Python child with PR_SET_PDEATHSIG, and graphmode run's child.
echo "pid 1: $(tr '\0' ' ' < /proc/1/cmdline)"; grep -i "NSpid\|PPid" /proc/self/status
echo "subreaper of this shell's ancestors:"; p=$$; while [ "$p" -gt 1 ]; do echo "  $p $(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-80)"; p=$(awk '/^PPid/{print $2}' /proc/$p/status); done
poll() {  # pid, seconds: its state and parent every 0.2 s
  for i in $(seq 1 $(( $2 * 5 ))); do
    if [ -e /proc/$1/status ]; then echo "  t=$i/5 s $(awk '/^State|^PPid/{printf "%s %s  ", $1, $2}' /proc/$1/status)"; else echo "  t=$i/5 s gone"; return; fi
    sleep 0.2
  done
}
echo "== 1. a plain orphan: setsid bash runs sleep 60 in the background, bash is killed -9"
setsid bash -c 'sleep 60 & echo $! > /tmp/orph.pid; exec sleep 60' & P=$!
sleep 0.5; O=$(cat /tmp/orph.pid); echo "bash $P, orphan-to-be $O"; kill -9 $P; poll $O 4
echo "== 2. a Python child with PR_SET_PDEATHSIG=SIGTERM whose handler takes 1 s, then writes a file"
rm -f /tmp/handler-done
cat > /tmp/kid.py <<'PY'
import ctypes, signal, time, os, sys
def h(s, f):
    time.sleep(1); open('/tmp/handler-done', 'w').write('done'); sys.exit(0)
signal.signal(signal.SIGTERM, h)
ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))
print('kid ready', os.getpid(), flush=True); time.sleep(60)
PY
setsid python3 -c 'import subprocess,sys; subprocess.Popen([sys.executable, "/tmp/kid.py"]); import time; time.sleep(60)' > /tmp/kid.out 2>&1 & P=$!
sleep 1.5; K=$(pgrep -f /tmp/kid.py | head -1); echo "parent $P kid $K"; kill -9 $P; poll $K 4
echo "handler finished: $(cat /tmp/handler-done 2>/dev/null || echo no)"
