# Sourced by the guest scripts that run many jrdma sides in a row (perftest-interop.sh, rxe-interop.sh): one long-lived
# JVM per side runs jrdma-cli's InteropSideMain, which reads one command a line ("LOG TOOL ARGS...", e.g. "LOG perf
# send_lat -n 20 HOST": the same Perf.run as `jrdma perf`), runs it with its output going to the file LOG and answers
# "DONE STATUS".
# Under TCG a JVM start costs tens of seconds, and a fresh JVM's code is cold for every run.
# A side that does not answer in time (or whose JVM ended) is killed, and its next command starts a fresh JVM.
#
#   side_define NAME ERRLOG COMMAND...   how side NAME's JVM starts (COMMAND ends with dev.jrdma.cli.InteropSideMain);
#                                        its own stderr (JVM warnings) goes to ERRLOG
#   side_start NAME                      starts its JVM now (side_run does when none runs)
#   side_run NAME LOG TOOL ARGS...       starts a command in side NAME (starting its JVM first when none runs)
#   side_busy NAME                       whether the command started last has not answered yet
#   side_wait NAME SECONDS               its status; 124 when it did not answer in time (the JVM is then killed)
#   side_stop NAME                       ends side NAME's JVM (the end of its input, then a kill)
# Words go to InteropSideMain separated by spaces: LOG and ARGS must not contain any.

declare -A side_pid side_in side_out side_cmd side_err side_answer
SIDE_FIFO_DIR=$(mktemp -d) # on the guest's tmpfs: its 9p share makes no FIFOs

side_define() {
  local name=$1 err=$2; shift 2
  side_err[$name]=$err
  side_cmd[$name]=$(printf '%q ' "$@")
}

side_start() { # NAME
  local name=$1 fifo="$SIDE_FIFO_DIR/side.$1" fd
  local -a cmd
  eval "cmd=(${side_cmd[$name]})"
  rm -f "$fifo.in" "$fifo.out"; mkfifo "$fifo.in" "$fifo.out"
  "${cmd[@]}" < "$fifo.in" > "$fifo.out" 2>> "${side_err[$name]}" &
  side_pid[$name]=$!
  exec {fd}>"$fifo.in"; side_in[$name]=$fd
  exec {fd}<"$fifo.out"; side_out[$name]=$fd
}

side_stop() { # NAME
  local name=$1 pid=${side_pid[$1]:-}
  [ -n "$pid" ] || return 0
  local in=${side_in[$name]} out=${side_out[$name]}
  exec {in}>&- {out}<&-
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  side_pid[$name]=
}

side_run() { # NAME LOG TOOL ARGS...
  local name=$1; shift
  [ -n "${side_pid[$name]:-}" ] || side_start "$name"
  side_answer[$name]=
  echo "$*" >&"${side_in[$name]}"
}

side_busy() { # NAME: true while the command started last runs (its answer not read yet, its JVM alive)
  local name=$1 line
  [ -n "${side_pid[$name]:-}" ] && [ -z "${side_answer[$name]:-}" ] || return 1
  kill -0 "${side_pid[$name]}" 2>/dev/null || return 1
  read -t 0 -u "${side_out[$name]}" || return 0
  read -r -u "${side_out[$name]}" line || return 1
  side_answer[$name]=${line:-?}
  return 1
}

side_wait() { # NAME SECONDS
  local name=$1 line=${side_answer[$1]:-}
  side_answer[$name]=
  [ -n "$line" ] || [ -z "${side_pid[$name]:-}" ] || read -t "$2" -r -u "${side_out[$name]}" line
  [[ $line =~ ^DONE\ ([0-9]+)$ ]] && return "${BASH_REMATCH[1]}"
  echo "side $name did not answer within $2 s (${line:-its JVM ended or is still busy}): its JVM is replaced" >&2
  side_stop "$name"
  return 124
}
