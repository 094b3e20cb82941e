import ctypes, errno, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long

class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

def parent(pid):
    stat = open(f"/proc/{pid}/stat").read()
    return int(stat[stat.rindex(")") + 2:].split()[1])

def ptrace_call(request, target):
    ctypes.set_errno(0)
    if libc.ptrace(request, target, None, None) < 0:
        return ctypes.get_errno()
    if request == 16:  # PTRACE_ATTACH stops it: wait, then let it go
        os.waitpid(target, 0x40000000)
        libc.ptrace(17, target, None, None)
    return 0

def mem(target):
    try:
        open(f"/proc/{target}/mem", "rb").close()
        return 0
    except OSError as e:
        return e.errno

def vm_read(target):
    address = 0x10000
    try:
        first = open(f"/proc/{target}/maps").readline()
        address = int(first.split("-")[0], 16)
    except OSError:
        pass
    buf = ctypes.create_string_buffer(8)
    local, remote = Iov(ctypes.addressof(buf), 8), Iov(address, 8)
    ctypes.set_errno(0)
    done = libc.process_vm_readv(target, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    return 0 if done > 0 else ctypes.get_errno()

def signal(target):
    try:
        os.kill(target, 0)
        return 0
    except OSError as e:
        return e.errno

ATTEMPTS = {
    "attach": lambda t: ptrace_call(16, t),
    "seize": lambda t: ptrace_call(0x4206, t),
    "mem": mem,
    "vm_read": vm_read,
    "signal": signal,
}

def attempt(how, target):
    # In a child of our own: a seized process is let go when it exits.
    pid = os.fork()
    if pid == 0:
        os._exit(how(target))
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

chain = [os.getpid()]
while chain[-1] > 1:
    chain.append(parent(chain[-1]))
targets = {"guard": chain[-2], "init": 1, "sibling": int(sys.argv[1])}
lines = []
for label, target in targets.items():
    for name, how in ATTEMPTS.items():
        code = attempt(how, target)
        lines.append(f"{name}-{label} " + ("ok" if code == 0 else errno.errorcode.get(code, str(code))))
child = subprocess.Popen(["sleep", "30"])
lines.append("seize-child " + ("ok" if ptrace_call(0x4206, child.pid) == 0 else "refused"))
child.kill()
print("\n".join(lines))
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
