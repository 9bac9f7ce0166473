#!/bin/bash
# A single-node Slurm cluster in a folder of its own, for tests/app/tst_window_slurm.cpp: its
# own munge key and munged socket, slurmctld and slurmd on free ports, a slurm.conf for this
# machine's CPUs (slurmd -C), state, spool and logs inside the folder. Run as root (SlurmUser).
#   slurm_cluster.sh start DIR   exit 0 once the node is idle (sinfo), with DIR/slurm.conf;
#                                exit 77 and the reason on stderr when the daemons cannot start
#   slurm_cluster.sh stop DIR    cancels its jobs and ends every process it started
set -u
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
conf="$dir/slurm.conf"

# Every process whose environment names this cluster's slurm.conf: the daemons, the job steps
# slurmd starts and the jobs' own processes (sbatch exports its environment to the job).
cluster_pids() {
  local p
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    tr '\0' '\n' 2>/dev/null < "$p/environ" | grep -qxF "SLURM_CONF=$conf" && echo "${p#/proc/}"
  done
}

# Ends pid $1 (TERM, then KILL after 5 s).
end_pid() {
  local pid=$1 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 50); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null
}

stop() {
  [ -f "$conf" ] || return 0
  export SLURM_CONF="$conf"
  if [ -f "$dir/slurmctld.pid" ] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    timeout 10 scancel --user="$(id -un)" 2>/dev/null
    for i in $(seq 50); do
      [ -z "$(timeout 5 squeue --noheader 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  local f pid
  for f in slurmd.pid slurmctld.pid munge/munged.pid; do
    [ -f "$dir/$f" ] && end_pid "$(cat "$dir/$f")"
    rm -f "$dir/$f"
  done
  for pid in $(cluster_pids); do kill -KILL "$pid" 2>/dev/null; done
  return 0
}

skip() {
  echo "slurm_cluster: $*" >&2
  for log in "$dir/log/slurmctld.log" "$dir/log/slurmd.log" "$dir/munge/munged.log"; do
    [ -s "$log" ] && { echo "--- $log" >&2; tail -n 5 "$log" >&2; }
  done
  stop
  exit 77
}

# A TCP port nobody listens on, from $1 up.
free_port() {
  local p=$1
  while (echo > "/dev/tcp/127.0.0.1/$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

start() {
  [ "$(id -u)" = 0 ] || skip "needs root (SlurmUser=root, as CI runs)"
  local c
  for c in munged mungekey slurmctld slurmd sbatch squeue sacct scancel sinfo; do
    command -v "$c" > /dev/null || skip "$c is not installed (apt-get install slurm-wlm munge)"
  done
  stop
  rm -rf "$dir"
  mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log" || skip "cannot make $dir"
  chmod 700 "$dir" "$dir/munge"
  mungekey --create --keyfile="$dir/munge/munge.key" 2>/dev/null || skip "mungekey failed"
  chmod 400 "$dir/munge/munge.key"
  local socket="$dir/munge/munge.socket"
  munged --force --socket="$socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" 2> "$dir/munge/munged.err" ||
    skip "munged did not start: $(head -n 1 "$dir/munge/munged.err")"

  local host node ctld_port slurmd_port
  host=$(hostname -s)
  node=$(slurmd -C 2>/dev/null | head -n 1)
  case "$node" in NodeName=*) ;; *) skip "slurmd -C did not describe this machine" ;; esac
  # This machine's CPUs and layout, as slurmd -C says, less the memory (a job asks for none).
  node=$(echo "$node" | sed -e 's/ RealMemory=[0-9]*//')
  ctld_port=$(free_port $((17000 + $$ % 2000 * 2)))
  slurmd_port=$(free_port $((ctld_port + 1)))
  cat > "$conf" <<CONF
ClusterName=paralabtest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=2
MinJobAge=300
InactiveLimit=0
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$conf"
  slurmctld -c -f "$conf" 2> "$dir/log/slurmctld.err" ||
    skip "slurmctld did not start: $(head -n 1 "$dir/log/slurmctld.err")"
  slurmd -f "$conf" 2> "$dir/log/slurmd.err" ||
    skip "slurmd did not start: $(head -n 1 "$dir/log/slurmd.err")"
  # The node is idle when slurmd has registered with slurmctld: at most 30 s.
  local i state
  for i in $(seq 150); do
    state=$(timeout 5 sinfo --noheader --format=%T 2>/dev/null | head -n 1)
    [ "$state" = idle ] && { echo "SLURM_CONF=$conf"; exit 0; }
    sleep 0.2
  done
  skip "the node did not become idle in 30 s (sinfo: ${state:-no answer})"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
