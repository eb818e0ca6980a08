"""A refused peer's pid, reused by a member of the socket group (run as root in a new pid namespace).

    unshare --pid --fork --mount-proc python3 peer_pid_reuse.py RCAGENTD CONFIG SOCKET GID LOG

Starts RCAGENTD, waits for READY=1 and opens the socket to every user (mode 0666: any peer can
connect; commands that change state still need the group). Then:
1. a peer R (uid/gid 65534, no supplementary groups) connects, hands the connection to a child H,
   and exits;
2. a process M (uid/gid 65534, supplementary group GID) is made to get R's pid, by writing R's pid
   minus one to /proc/sys/kernel/ns_last_pid before forking it (retried if another process took
   it, and with a new R if a daemon thread did: the daemon keeps its threads);
3. H sends mark-stale on R's connection.
A daemon that looks up /proc/PID/status of the connection's pid finds M's groups there and obeys;
one that uses the connection's own credentials (SO_PEERCRED, SO_PEERGROUPS) refuses.
Prints JSON lines: {"refusedPid", "memberPid", "memberGroups"} then {"answer": H's response line}.
"""
import json
import os
import socket
import subprocess
import sys

rcagentd, config, socket_path, group, log_path = sys.argv[1:6]
group = int(group)
NOBODY = 65534


def say(**fields):
    print(json.dumps(fields), flush=True)


def become_nobody(groups):
    os.setgroups(groups)
    os.setgid(NOBODY)
    os.setuid(NOBODY)


notify_path = socket_path + ".notify"
notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
notify.bind(notify_path)
notify.settimeout(30)
with open(log_path, "ab") as log:
    daemon = subprocess.Popen(
        [rcagentd, "--config", config], env=dict(os.environ, NOTIFY_SOCKET=notify_path), stdout=log, stderr=log
    )
while b"READY=1" not in notify.recv(4096):
    pass
os.chmod(socket_path, 0o666)

def refused_peer():
    """R (uid/gid 65534, no supplementary groups) connects, hands the connection to a child H, and
    exits; returns R's pid (free again: R is reaped), the pipe that tells H to send, and the one H
    answers on. H sends nothing when the first pipe closes without a byte."""
    go_read, go_write = os.pipe()
    answer_read, answer_write = os.pipe()
    refused = os.fork()
    if refused == 0:
        os.close(go_write)
        os.close(answer_read)
        become_nobody([])
        connection = socket.socket(socket.AF_UNIX)
        connection.connect(socket_path)
        if os.fork() == 0:
            if os.read(go_read, 1) != b"x":
                os._exit(0)
            connection.sendall(b'{"op":"mark-stale","reason":"sent on a refused peer\'s connection"}\n')
            os.write(answer_write, connection.makefile("rb").readline())
            os._exit(0)
        os._exit(0)
    os.close(go_read)
    os.close(answer_write)
    os.waitpid(refused, 0)  # R has exited and been reaped: its pid is free
    return refused, go_write, answer_read


def member_at(refused):
    """M (uid/gid 65534, supplementary group GID) forked at pid `refused`, or None: each try writes
    the pid before it to ns_last_pid, then forks; a daemon thread started in between takes the pid
    first. A thread keeps its pid while it lives (the daemon parks its threads for reuse), so once
    one holds it no try can get it."""
    for attempt in range(200):
        if os.path.exists(f"/proc/{daemon.pid}/task/{refused}"):
            return None
        release_read, release_write = os.pipe()
        dropped_read, dropped_write = os.pipe()
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(refused - 1))
        pid = os.fork()
        if pid == 0:
            become_nobody([group])
            os.close(release_write)
            os.write(dropped_write, b"x")
            os.read(release_read, 1)
            os._exit(0)
        os.close(release_read)
        os.close(dropped_write)
        os.read(dropped_read, 1)  # M runs with its final credentials
        os.close(dropped_read)
        if pid == refused:
            return pid, release_write
        os.close(release_write)  # another process took the pid first: try again
        os.waitpid(pid, 0)
    return None


# A refused peer whose pid a daemon thread took is given up (its H exits without sending) and
# another one made.
for attempt in range(20):
    if attempt:
        os.close(go_write)
        os.close(answer_read)
    refused, go_write, answer_read = refused_peer()
    member = member_at(refused)
    if member:
        break

groups = None
if member:
    with open(f"/proc/{refused}/status") as status:
        groups = next((line.split()[1:] for line in status if line.startswith("Groups:")), [])
say(refusedPid=refused, memberPid=member[0] if member else None, memberGroups=groups)
os.write(go_write, b"x")
say(answer=os.read(answer_read, 65536).decode().strip())
if member:
    os.close(member[1])
daemon.terminate()
daemon.wait()
