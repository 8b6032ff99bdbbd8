"""Why does `graphmode run`'s child vanish when graphmode run is killed -9? This process is a child subreaper: the
orphaned child is reparented to it, so waitpid tells how it ended (exit status or signal)."""
import ctypes, json, os, signal, subprocess, sys, tempfile, textwrap, time
ctypes.CDLL(None).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
d = tempfile.mkdtemp()
script = os.path.join(d, "program.py")
open(script, "w").write(textwrap.dedent('''
    import sys, time
    from cuda.bindings import driver as cu
    cu.cuInit(0)
    ctx = cu.cuDevicePrimaryCtxRetain(cu.cuDeviceGet(0)[1])[1]
    cu.cuCtxSetCurrent(ctx)
    buf = cu.cuMemAlloc(1 << 20)[1]
    for _ in range(100):
        cu.cuMemsetD8(buf, 1, 1 << 20)
    cu.cuCtxSynchronize()
    print("ready", flush=True)
    time.sleep(120)
'''))
out = os.path.join(d, "k.gmtrace")
err = open(os.path.join(d, "err.txt"), "w")
env = dict(os.environ, PYTHONFAULTHANDLER="1")
p = subprocess.Popen([sys.executable, "-m", "graphmode", "run", "--out", out, script], cwd=d, stdout=subprocess.PIPE, stderr=err,
                     text=True, start_new_session=True, env=env)
t0 = time.time()
while time.time() - t0 < 120 and p.stdout.readline().strip() != "ready":
    pass
kids = []
for t in os.listdir(f"/proc/{p.pid}/task"):
    kids += open(f"/proc/{p.pid}/task/{t}/children").read().split()
print("graphmode run", p.pid, "children", kids, flush=True)
child = int(kids[0])
os.kill(p.pid, signal.SIGKILL)
p.wait()
t0 = time.time()
last = ""
while True:
    pid, status = os.waitpid(child, os.WNOHANG)
    if pid:
        how = f"killed by signal {os.WTERMSIG(status)} ({signal.Signals(os.WTERMSIG(status)).name})" if os.WIFSIGNALED(status) else f"exit status {os.WEXITSTATUS(status)}"
        print(f"child {child} reaped at {time.time() - t0:.2f} s: {how}", flush=True)
        break
    try:
        st = {l.split(":")[0]: l.split(":", 1)[1].strip() for l in open(f"/proc/{child}/status") if l.split(":")[0] in ("State", "PPid", "SigPnd", "ShdPnd", "Threads")}
        wchan = open(f"/proc/{child}/wchan").read()
        now = json.dumps(st) + " wchan " + wchan
    except OSError as e:
        now = f"proc gone: {e}"
    if now != last:
        print(f"  {time.time() - t0:.2f} s {now}", flush=True)
        last = now
    if time.time() - t0 > 60:
        print("still there after 60 s"); os.kill(child, signal.SIGKILL); break
    time.sleep(0.05)
err.close()
print("--- stderr of graphmode run and its child:\n" + open(os.path.join(d, "err.txt")).read()[-4000:])
r = subprocess.run([sys.executable, "-m", "graphmode", "info", out], capture_output=True, text=True)
print("--- graphmode info:", r.returncode, "\n" + (r.stdout + r.stderr)[-1500:])
