#!/usr/bin/env python3
"""crash_test.py — crash tests of durable TPC-C (`ruma vmcache --durable`).

Two series on one store (a small TPC-C database, 2 threads, a buffer pool
smaller than the data so that eviction writes pages all the time, a fuzzy
checkpoint every --checkpoint seconds; commits wait for the log, or with
--durable=pipeline are acknowledged once the log is durable while the
thread goes on):

  * K rounds killed with SIGKILL at a random instant: most rounds reopen the
    kept store and run, some start with a fresh load, so the instants fall
    into load, run, checkpoints and eviction alike;
  * P rounds ended by a simulated power loss at a random instant
    (RUMA_POWER_LOSS_AFTER_MS: the os layer undoes every write that no
    completed fsync/fdatasync covered and the process exits at once); in
    half of them the unsynced page writes are torn (RUMA_POWER_LOSS_TORN:
    the first half of each 4 KiB block reached the file).

After each round the store is reopened with --keep --runfor 0 --check
--commit-log: recovery must succeed, TPC-C consistency conditions 1-4 and
every B-tree check must hold, and every New-Order whose commit returned
(pipelined: was acknowledged; the commit log, accumulated since the last
fresh load) must be present.
A round killed during a fresh load may find the load incomplete or the
database only partly created (the store says so, exit 2); that is the
expected outcome; the store is then loaded again without a crash.

Prints one line per round with -v, and a summary: kills, failures,
recovery times (min / median / max, as reported by the store).  Exit
status 0 when every round passed, 1 otherwise; the store of the first
failing round is kept in DIR/failed-*.
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

RECOVERY_RE = re.compile(r"recovered from its log in ([0-9.]+) ms")
POWERLOSS_STATUS = 86


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ruma", default="build/ruma", help="the ruma binary")
    p.add_argument("--kills", type=int, default=200, help="SIGKILL rounds (K)")
    p.add_argument("--powerloss", type=int, default=100, help="power-loss rounds (P)")
    p.add_argument("--dir", default=None, help="work directory (default: a new temp dir)")
    p.add_argument("--scale", type=int, default=20,
                   help="TPCC_SCALE: divide the per-warehouse rows by this (test-only)")
    p.add_argument("--warehouses", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--physgb", default="0.004", help="buffer pool (smaller than the data)")
    p.add_argument("--checkpoint", default="0.2", help="seconds between checkpoints")
    p.add_argument("--max-run", type=float, default=1.5,
                   help="longest time before the kill / power loss (s)")
    p.add_argument("--fresh-every", type=int, default=8,
                   help="about one round in this many starts with a fresh load")
    p.add_argument("--durable", choices=["sync", "pipeline", "both"], default="both",
                   help="commit mode of the runs (both: each round picks one at random)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--timeout", type=float, default=300.0, help="per command (s)")
    p.add_argument("-v", "--verbose", action="store_true")
    return p.parse_args()


class Crash:
    def __init__(self, a):
        self.a = a
        self.dir = a.dir or tempfile.mkdtemp(prefix="ruma-crash-")
        os.makedirs(self.dir, exist_ok=True)
        self.store = os.path.join(self.dir, "store")
        self.commits = os.path.join(self.dir, "commits")
        self.rng = random.Random(a.seed)
        self.loaded = False
        self.recoveries = []
        self.failures = 0
        self.kills = {"load": 0, "run": 0}
        self.kept_failure = False

    def base(self, keep, runfor):
        a = self.a
        cmd = [a.ruma, "vmcache", "--workload", "tpcc", "--block", self.store,
               "--virtgb", "1", "--physgb", a.physgb, "--datasize", str(a.warehouses),
               "--threads", str(a.threads), "--runfor", str(runfor), "--durable=" + self.mode(),
               "--checkpoint", a.checkpoint, "--commit-log", self.commits,
               "--seed", str(self.rng.randrange(1 << 62))]
        if keep:
            cmd.append("--keep")
        else:
            cmd.append("--force")
        return cmd

    def mode(self):
        if self.a.durable != "both":
            return self.a.durable
        return self.rng.choice(["sync", "pipeline"])

    def env(self, powerloss_ms=None, torn=False):
        e = dict(os.environ)
        e["TPCC_SCALE"] = str(self.a.scale)
        e.pop("RUMA_POWER_LOSS_AFTER_MS", None)
        e.pop("RUMA_POWER_LOSS_TORN", None)
        if powerloss_ms is not None:
            e["RUMA_POWER_LOSS_AFTER_MS"] = str(powerloss_ms)
            e["RUMA_POWER_LOSS_TORN"] = "1" if torn else "0"
        return e

    def run(self, cmd, env):
        return subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, timeout=self.a.timeout)

    def crash_round(self, powerloss):
        """One round: start (fresh load or kept store), crash, return (phase, stderr)."""
        fresh = not self.loaded or self.rng.randrange(self.a.fresh_every) == 0
        # The load of the small database takes a fraction of a second: aim
        # the crash of a fresh round at it (and the first moments of the run).
        at = self.rng.uniform(0.005, 0.3) if fresh else self.rng.uniform(0.02, self.a.max_run)
        cmd = self.base(keep=not fresh, runfor=int(self.a.max_run) + 30)
        if powerloss:
            torn = self.rng.randrange(2) == 1
            r = self.run(cmd, self.env(powerloss_ms=max(1, int(at * 1000)), torn=torn))
            err = r.stderr
            if r.returncode != POWERLOSS_STATUS:
                return None, "expected exit %d (power loss), got %d\n%s" % (
                    POWERLOSS_STATUS, r.returncode, err)
        else:
            p = subprocess.Popen(cmd, env=self.env(), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            time.sleep(at)
            p.send_signal(signal.SIGKILL)
            _, err = p.communicate(timeout=self.a.timeout)
            if p.returncode != -signal.SIGKILL:
                return None, "the run ended before the kill (exit %d)\n%s" % (p.returncode, err)
        phase = "run" if "load: " in err else "load"
        return phase, err

    def verify(self, phase):
        """Reopen, recover, check; True when right."""
        r = self.run(self.base(keep=True, runfor=0) + ["--check"], self.env())
        m = RECOVERY_RE.search(r.stderr)
        if m:
            self.recoveries.append(float(m.group(1)))
        if r.returncode == 0 and "committed new-orders of the commit log are present" in r.stderr:
            self.loaded = True
            return True, r.stderr
        if phase == "load" and r.returncode == 2 and ("load did not complete" in r.stderr or
                                                       "partial TPC-C database" in r.stderr):
            # Expected; load afresh (uninterrupted), so that the next round
            # does not start with a load again.
            r = self.run(self.base(keep=False, runfor=0), self.env())
            self.loaded = r.returncode == 0
            return self.loaded, r.stderr
        return False, r.stderr

    def keep_failure(self, n):
        if self.kept_failure:
            return
        self.kept_failure = True
        dst = os.path.join(self.dir, "failed-%d" % n)
        os.makedirs(dst, exist_ok=True)
        for f in (self.store, self.store + ".wal", self.commits):
            if os.path.exists(f):
                shutil.copy2(f, dst)

    def series(self, n, powerloss):
        kind = "power loss" if powerloss else "SIGKILL"
        for i in range(n):
            phase, err = self.crash_round(powerloss)
            if phase is None:
                self.failures += 1
                print("round %d (%s): %s" % (i, kind, err.strip()[-2000:]))
                self.loaded = False
                continue
            self.kills[phase] += 1
            ok, verr = self.verify(phase)
            if not ok:
                self.failures += 1
                self.keep_failure(i)
                print("round %d (%s during %s): reopen/check FAILED:\n%s" %
                      (i, kind, phase, verr.strip()[-3000:]))
                self.loaded = False
            elif self.a.verbose:
                print("round %d (%s during %s): ok" % (i, kind, phase))
            sys.stdout.flush()

    def summary(self):
        rec = sorted(self.recoveries)
        times = ("min %.1f / median %.1f / max %.1f ms" %
                 (rec[0], rec[len(rec) // 2], rec[-1])) if rec else "none ran"
        print("crash test: %d SIGKILL + %d power-loss rounds (%d during load, %d during the run), "
              "%d failures; recovery (%d): %s; dir %s" %
              (self.a.kills, self.a.powerloss, self.kills["load"], self.kills["run"],
               self.failures, len(rec), times, self.dir))


def main():
    a = parse_args()
    if not os.access(a.ruma, os.X_OK):
        print("crash_test: %s is not an executable (use --ruma)" % a.ruma, file=sys.stderr)
        return 2
    if a.kills < 0 or a.powerloss < 0 or a.max_run <= 0.02 or a.fresh_every < 1:
        print("crash_test: bad counts or times", file=sys.stderr)
        return 2
    c = Crash(a)
    c.series(a.kills, powerloss=False)
    c.series(a.powerloss, powerloss=True)
    c.summary()
    if c.failures == 0 and not a.dir and not c.kept_failure:
        shutil.rmtree(c.dir, ignore_errors=True)
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
