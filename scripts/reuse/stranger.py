#!/usr/bin/env python3
"""Helpers of the PID-reuse harness (scripts/reuse/run.mjs); runs only inside its PID namespace.

  stranger.py init -- CMD...   PID 1 of the namespace: runs CMD in a process group of its own,
                               reaps every orphan (so a dead process never lingers as a zombie
                               holding its PID), forwards SIGINT/SIGTERM/SIGHUP to CMD and exits
                               with CMD's status (the kernel then kills whatever is left).
  stranger.py serve            The stranger factory: one JSON request a line on stdin, one JSON
                               answer a line on stdout. Strangers are forks of this process (no
                               exec), so none carries PROCWARD_SESSION_ID unless this process
                               did: it refuses to start when it does.

Requests:
  {"op": "prepare", "shape": S}
      Shapes "d" and "f" need processes started BEFORE the job: a session leader L (setsid)
      and its child C, both in L's session. Answers {"handle": H, "pids": [L, C]} (other
      shapes: {"handle": null, "pids": []}).
  {"op": "arrange", "target": T, "shape": S, "handle": H}
      Hands PID T to a new stranger (ns_last_pid = T-1, fork, check, retry a few times):
        a  double-forked daemon: T calls setsid, forks a worker W, exits -> W lives in
           session and group T (whose leader, T, is gone); strangers [W]
        b  live session and group leader holding T (setsid, sleeps); strangers [T]
        c  plain process holding T, in this factory's group (the harness's), no setsid;
           strangers [T]
        d  L (started before the job) forks N = T, makes it a group leader and moves its
           older child C into group T (setpgid); strangers [L, C, N]
        f  as d, then N exits: group T holds only C, started before the job, and PID T is
           not a live process; strangers [L, C]
        e  leader holding T (setsid) with three children in its group; strangers [T, c1, c2, c3]
      Answers {"ok": true, "strangers": [...], "holder": T or null, "tries": n, "groups": [...]}
      or {"ok": false, "reason": "..."} (nothing left running; a prepared L/C stays for the
      harness to clean up).
"""
import json
import os
import signal
import sys
import time

NS_LAST_PID = '/proc/sys/kernel/ns_last_pid'
TRIES = 6


def proc_exists(pid):
    return os.path.exists('/proc/%d' % pid)


def sleep_forever():
    while True:
        time.sleep(3600)


def detach_stdio():
    """A stranger keeps none of the factory's pipes (its reader would never see EOF)."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)


def fork_at(target):
    """Fork so that the child gets PID `target`.

    Returns ('parent', pid, read_fd, tries) on success, ('child', write_fd) in the child, or
    ('fail', reason, tries). A child that got another PID exits at once (SIGCHLD is ignored,
    so the kernel reaps it).
    """
    tries = 0
    while tries < TRIES:
        tries += 1
        if proc_exists(target):
            return ('fail', 'PID %d is in use' % target, tries)
        with open(NS_LAST_PID, 'w') as f:
            f.write(str(target - 1))
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            if os.getpid() != target:
                os._exit(0)
            return ('child', w)
        os.close(w)
        if pid == target:
            return ('parent', pid, r, tries)
        os.close(r)
        time.sleep(0.002 * tries)
    return ('fail', 'another process took PID %d first (%d tries)' % (target, tries), tries)


def read_all(fd):
    chunks = []
    while True:
        b = os.read(fd, 4096)
        if not b:
            break
        chunks.append(b)
    os.close(fd)
    return b''.join(chunks).decode()


def child_main(shape, w):
    """Runs in the process that holds the target PID; never returns."""
    try:
        detach_stdio()
        me = os.getpid()
        if shape == 'a':
            os.setsid()
            worker = os.fork()
            if worker == 0:
                os.close(w)
                sleep_forever()
            os.write(w, json.dumps({'strangers': [worker], 'groups': [me]}).encode())
            os.close(w)
            os._exit(0)
        if shape == 'b':
            os.setsid()
            os.write(w, json.dumps({'strangers': [me], 'groups': [me]}).encode())
            os.close(w)
            sleep_forever()
        if shape == 'c':
            os.write(w, json.dumps({'strangers': [me], 'groups': []}).encode())
            os.close(w)
            sleep_forever()
        if shape == 'e':
            os.setsid()
            kids = []
            for _ in range(3):
                k = os.fork()
                if k == 0:
                    os.close(w)
                    sleep_forever()
                kids.append(k)
            os.write(w, json.dumps({'strangers': [me] + kids, 'groups': [me]}).encode())
            os.close(w)
            sleep_forever()
    finally:
        os._exit(0)
    os._exit(0)


def wait_gone(pid, ms=2000):
    end = time.time() + ms / 1000.0
    while proc_exists(pid) and time.time() < end:
        time.sleep(0.002)
    return not proc_exists(pid)


def arrange_simple(target, shape):
    got = fork_at(target)
    if got[0] == 'fail':
        return {'ok': False, 'reason': got[1], 'tries': got[2]}
    if got[0] == 'child':
        child_main(shape, got[1])
    _, pid, r, tries = got
    info = json.loads(read_all(r) or '{}')
    if 'strangers' not in info:
        return {'ok': False, 'reason': 'the stranger at %d did not report' % pid, 'tries': tries}
    holder = target
    if shape == 'a':
        # The process that held T is gone (reaped by the kernel: SIGCHLD is ignored); its
        # worker keeps session and group T.
        wait_gone(target)
        holder = None
    return {'ok': True, 'strangers': info['strangers'], 'groups': info['groups'], 'holder': holder, 'tries': tries}


# --- shapes d and f: a leader and its child started before the job -----------------------

prepared = {}
next_handle = [1]


def leader_main(cmd_r, ans_w):
    """L: a session leader with an older child C; on 'go T S' makes N = T and moves C into group T."""
    detach_stdio()
    os.setsid()
    c = os.fork()
    if c == 0:
        os.close(cmd_r)
        os.close(ans_w)
        sleep_forever()
    os.write(ans_w, (json.dumps({'pids': [os.getpid(), c]}) + '\n').encode())
    f = os.fdopen(cmd_r, 'r')
    for line in f:
        req = json.loads(line)
        target, shape = req['target'], req['shape']
        got = fork_at(target)
        if got[0] == 'fail':
            os.write(ans_w, (json.dumps({'ok': False, 'reason': got[1], 'tries': got[2]}) + '\n').encode())
            continue
        if got[0] == 'child':
            try:
                os.close(got[1])
                os.close(ans_w)
                sleep_forever()
            finally:
                os._exit(0)
        _, n, r, tries = got
        os.close(r)
        try:
            os.setpgid(n, n)
            os.setpgid(c, n)
        except OSError as e:
            os.kill(n, signal.SIGKILL)
            os.write(ans_w, (json.dumps({'ok': False, 'reason': 'setpgid: %s' % e, 'tries': tries}) + '\n').encode())
            continue
        strangers = [os.getpid(), c, n]
        holder = n
        if shape == 'f':
            os.kill(n, signal.SIGKILL)
            wait_gone(n)
            strangers = [os.getpid(), c]
            holder = None
        os.write(ans_w, (json.dumps({'ok': True, 'strangers': strangers, 'groups': [n, os.getpid()], 'holder': holder, 'tries': tries}) + '\n').encode())
        break
    # One arrangement per leader; it then stays, a stranger itself.
    f.close()
    os.close(ans_w)
    sleep_forever()


def prepare(shape):
    if shape not in ('d', 'f'):
        return {'handle': None, 'pids': []}
    cmd_r, cmd_w = os.pipe()
    ans_r, ans_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(cmd_w)
        os.close(ans_r)
        try:
            leader_main(cmd_r, ans_w)
        finally:
            os._exit(0)
    os.close(cmd_r)
    os.close(ans_w)
    ans = os.fdopen(ans_r, 'r')
    first = json.loads(ans.readline())
    h = next_handle[0]
    next_handle[0] += 1
    prepared[h] = (os.fdopen(cmd_w, 'w'), ans)
    return {'handle': h, 'pids': first['pids']}


def arrange(req):
    shape = req['shape']
    target = int(req['target'])
    if shape in ('d', 'f'):
        h = req.get('handle')
        if h not in prepared:
            return {'ok': False, 'reason': 'shape %s was not prepared' % shape}
        cmd, ans = prepared.pop(h)
        cmd.write(json.dumps({'target': target, 'shape': shape}) + '\n')
        cmd.flush()
        line = ans.readline()
        cmd.close()
        ans.close()
        if not line:
            return {'ok': False, 'reason': 'the prepared leader is gone'}
        return json.loads(line)
    return arrange_simple(target, shape)


def serve():
    if os.environ.get('PROCWARD_SESSION_ID') or os.environ.get('PROCWARD_OUTER_SESSION_IDS'):
        sys.stderr.write('stranger.py: refusing to run with a procward mark in the environment\n')
        sys.exit(2)
    # Every fork of this process (and theirs) is reaped by the kernel at once.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    out = sys.stdout
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            if req['op'] == 'prepare':
                res = prepare(req['shape'])
            elif req['op'] == 'arrange':
                res = arrange(req)
            elif req['op'] == 'ping':
                res = {'pong': os.getpid(), 'pgid': os.getpgid(0)}
            else:
                res = {'error': 'unknown op %r' % req.get('op')}
        except Exception as e:  # an answer for every request
            res = {'ok': False, 'error': repr(e)}
        out.write(json.dumps(res) + '\n')
        out.flush()


def init(cmd):
    child = os.fork()
    if child == 0:
        os.setpgid(0, 0)
        try:
            os.execvp(cmd[0], cmd)
        finally:
            os._exit(127)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, lambda sig, _f: os.kill(child, sig))
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            sys.exit(1)
        except InterruptedError:
            continue
        if pid == child:
            sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


if __name__ == '__main__':
    if len(sys.argv) >= 2 and sys.argv[1] == 'serve':
        serve()
    elif len(sys.argv) >= 4 and sys.argv[1] == 'init' and sys.argv[2] == '--':
        init(sys.argv[3:])
    else:
        sys.stderr.write(__doc__)
        sys.exit(2)
