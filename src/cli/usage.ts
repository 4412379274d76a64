export const USAGE = `quorumlock: a Redlock lock across N independent Redis masters, from the shell.

Usage:
  quorumlock run --resource <name> --ttl <duration> [options] -- <command> [args...]
  quorumlock elect --name <election> --ttl <duration> [options] -- <command> [args...]
  quorumlock leader <election> [--json]
  quorumlock status <resource> [--json]
  quorumlock members [--json]
  quorumlock trust --yes [--force]
  quorumlock restore-fencing --floor <token>
  quorumlock --help | --version

Every command takes --members (or the environment variable QUORUMLOCK_MEMBERS): comma-separated
member URLs, each one independent member (3 or 5 of them; a lock needs a quorum of floor(N/2)+1):
  redis://[[user]:password@]host[:port][/db]          a single master (rediss:// for TLS)
  redis+sentinel://[[user]:password@]host[:port][+host[:port]...]/<master-name>[/db]
                                                      a Sentinel-managed group: its sentinels
                                                      (default port 26379), joined by +
  redis+cluster://[[user]:password@]host[:port][+host[:port]...]
                                                      a Redis Cluster: seed nodes (default port
                                                      6379); no /db, a cluster has only db 0
  rediss+sentinel:// and rediss+cluster:// use TLS to the data nodes. user and password are those
  of the data nodes (sentinels are asked without auth). Percent-encode a , @ or / in a password.
  e.g. redis+sentinel://:pw@s1:26379+s2:26379/mymaster,redis+cluster://c1:7000+c2:7000,redis://h3
  --tls-ca <file> (or QUORUMLOCK_TLS_CA): the PEM CA that signed the rediss… members' certificates,
  when it is not one Node trusts by default. Read before any connection.

run: like flock(1), across the members. Locks <name>, runs the command with stdin/stdout/stderr
inherited while extending the lock (every third of the ttl), releases it when the command exits.
  --resource <name>       the lock's name (required)
  --ttl <duration>        lock time-to-live; the lock is extended while the command runs (required)
  --wait <duration>       wait in line up to this long for a held lock (default 0: one attempt)
  --skip-if-locked        exit 0 without a word when another owner holds the lock (cron on several
                          hosts); with --json one "skipped" event
  -E, --conflict-exit-code <0-255>
                          the exit code when another owner holds the lock past --wait (flock -E;
                          default 73); not with --skip-if-locked
  -s, --shared            a shared lock (flock -s): any number of shared holders, or one exclusive
  --at-least <duration>   hold the lock at least this long from acquisition: a command that ends
                          sooner leaves it held until then (ShedLock's lockAtLeastFor), so a fast job
                          on a host with a skewed clock does not run twice in one window (at most
                          --max-lock-ttl)
  --grace <duration>      time between SIGTERM and SIGKILL when the command must stop (default 10s),
                          capped so that SIGKILL lands by the lock's guaranteed deadline
  --fencing               issue a fencing token, passed as QUORUMLOCK_FENCE
  --max-lock-ttl <dur>    the longest ttl any client of these resources uses, and the restart
                          quarantine (default max(60s, --ttl, --at-least))
  --quarantine-from-restart  count a member's restart quarantine from its restart (where the
                          server proves it), not from the first lock after it: members restarted
                          and left idle are ready at once. Only when no standby can take over a
                          member's address and members start after their clock is synced
  --node-timeout <dur>    time each member gets to answer each call (default 50ms); --ttl must be
                          more than 3 × this
  --json                  one JSON line per event on stderr: acquired, lost, failed (outcome, reason,
                          members: member, vote, state, code), skipped, warning, exit (exitCode and
                          source: "command" for the command's own code, "quorumlock" for the CLI's);
                          a usage error is a failed event with outcome "usage" and a stable code
  The command gets QUORUMLOCK_RESOURCE and, with --fencing, QUORUMLOCK_FENCE. It runs in a process
  group of its own: signals (SIGINT, SIGTERM, SIGHUP forwarded; the deadline's SIGTERM and SIGKILL)
  reach everything it started. What it leaves in its group when it exits is stopped (SIGTERM, then
  SIGKILL by --grace or the deadline) before the lock is released. Should quorumlock itself die
  (SIGKILL), a watchdog SIGKILLs the group at once. Not covered: a process that leaves the group
  itself (setsid, a daemon). After a forwarded signal that ended the command (128+n), quorumlock
  releases the lock and then dies by that same signal (systemd counts SIGTERM as a clean stop). On a terminal, a status line shows while waiting, and why (held by another
  owner, members quarantined, members unreachable).
  Stopping by the deadline: the lock is extended every ttl/3. If extensions keep failing and the
  validity left falls to the stop window, min(--grace, ttl/3 − 2 × --node-timeout), the command
  gets SIGTERM, and SIGKILL just before the lock's deadline (or --grace after the SIGTERM, should
  an extension succeed meanwhile). If the lock is lost outright, SIGTERM and SIGKILL at once: it
  guarantees nothing more. Either way run exits 75.

elect: run the command only while this process leads the election <name> (docs/elections.md).
  Waits in line to be elected; while leading, runs the command with QUORUMLOCK_TERM (the term: a
  fencing token, larger than every earlier leader's; also as QUORUMLOCK_FENCE) and
  QUORUMLOCK_RESOURCE=<name>, stops it as run does when leadership is lost (SIGTERM, SIGKILL by
  the deadline), then campaigns again. The command exiting by itself while leading ends elect with
  its code (after resigning). SIGINT and SIGTERM are forwarded to the command, then elect resigns
  and exits; while waiting they end the wait (128+n).
  --name <election>       the election's name (required)
  --ttl <duration>        leadership ttl: a leader that dies is replaced about this long after its
                          last extension (required; more than 5 × --node-timeout)
  --id <text>             how observers name this candidate (default <hostname>:<pid>)
  --grace, --max-lock-ttl, --quarantine-from-restart, --node-timeout, --json: as for run (--json events: waiting, elected,
                          lost, campaign, warning, exit, failed)
  While it cannot be elected it says why, on stderr (--json: a "waiting" event with reason, cause
  held/quarantined/unreachable, count and each member's state), when it starts waiting and when
  the reason changes. The command's process group, the watchdog and the ending by a forwarded
  signal are as for run.

leader <election>: who leads, as a quorum of members says: its id, term, how long a quorum still
  holds it, and how many members answered (--json: state led/vacant/unknown, leader, why, quorum,
  answered, members). Exits 0 when a leader is known, 3 when vacant, 69 when too few members
  answered to tell, 75 when they answered but no quorum names one leader yet (a hand-over under
  way: ask again). Takes --timeout (per member, default 1s) and --max-lock-ttl.

status <resource>: per member: reachable, role, PING latency, held, shared (by how many readers)
  or free, remaining PTTL, the owner's fingerprint (first 8 hex chars of sha256 of the lock value;
  never the value), and the restart quarantine (age of the member's epoch vs --max-lock-ttl,
  default 60s); then on how many members it is held, held shared or free, and how many could not
  be read (exit 69 if any).
members: health of the member set: role, epoch age and quarantine, latency, Redis version.
  With --quarantine-from-restart, the quarantine as a client with that flag sees it (counted from a
  restart the member proved). Exits 69 when fewer than a quorum can vote: healthy (reachable masters) and past the restart
  quarantine; a set that answers but sits out its quarantine fails every lock. A cluster counts as a master
  when CLUSTER INFO says cluster_state:ok and every slot's node answers; its quarantine is that of
  its worst slot epoch (none, stale, quarantined, trusted), with counts per state (status <resource>:
  the resource's slot). When quarantine is what keeps a quorum from voting, it says what to do:
  wait, when any member shows a past (then the others restarted or were flushed); trust --yes only
  when none does (--json: note, trustAdvised).
trust --yes: declares the members brand new and trusted (redlock.trustMembers()). Brand-new
  masters otherwise count only once --max-lock-ttl has passed since their first lock (restart
  quarantine). Run it ONCE for a new deployment. NEVER for members that restarted empty or were
  flushed while locks may have been held: that is exactly the hazard the quarantine protects
  against. Without --yes it refuses (exit 64). It warns (stderr, and "warning" in --json) when
  some members' epochs show a past (older than --max-lock-ttl, fence tokens issued, written by an
  earlier server process) while others have none or a fresh one: the restarted-empty case. Then
  it refuses (exit 64) unless --force is given as well. On a
  cluster it writes the epoch of each of the 16384 slots (its commands get at least 10s).
restore-fencing --floor <token>: after a majority of members lost their data at once, fenced
  locks fail ('unfenced') until an operator names a floor at or above every fencing token ever
  issued, e.g. the highest token the protected resources accepted (redlock.restoreFencing()). Every
  member's fence counter becomes at least <token>, so the next token is above it. It does not end
  a quarantine.
  status, members, trust and restore-fencing also take --timeout <duration> (per command, default
  1s) and --json.

Durations: 500ms, 30s, 1.5s, 2m, 1h. A number without a unit is refused (--ttl 300: 300ms or
300s?); 0 needs none.

Exit codes:
  0     success (run: the command exited 0)
  1-255 run: the command's own exit code, passed through. Where it equals one of the codes below
        (64, 69, 73, 75), run adds a note on stderr, and --json says source "command"
  3     leader: the leadership is vacant
  64    usage error (bad or missing flag, URL or duration; trust without --yes; trust of members that
        look restarted, without --force)
  69    members unreachable, too few healthy masters, members in quarantine, or another error
  73    run: the lock is held by another owner and was not had within --wait (0 with --skip-if-locked,
        or the code of -E)
  74    not run or elect: it would have exited 0, but its stdout could not be written (ENOSPC,
        EIO; a reader that went away, EPIPE, is not an error)
  75    run: the lock was lost, or could not be kept, while the command ran; the command was stopped.
        leader: members answered, but no quorum names one leader yet
  126   run: the command could not be executed; 127: command not found
  128+n run: the command was killed by signal n. When quorumlock itself received signal n (SIGINT,
        SIGTERM, SIGHUP) and the command ended by it, or the wait was interrupted by it, quorumlock
        instead dies by signal n after releasing the lock: a shell or supervisor sees "killed by
        signal n" (a shell reports 128+n as ever)
`;
