// Ctrl-C and SIGTERM ask a training run to stop at the next step boundary,
// where the trainer saves a checkpoint and the CLI exits 130 / 143 (128 +
// the signal, as a shell reports a process killed by it). A second signal
// while the first is pending ends the process at once (the default action),
// losing only the step in flight. Installed by the CLI, not by the Trainer:
// a program embedding the trainer keeps its own signal handling.
#ifndef MANTISSA_TRAINER_CORE_STOP_SIGNALS_H_
#define MANTISSA_TRAINER_CORE_STOP_SIGNALS_H_

namespace mnt::trainer {

// Installs the SIGINT and SIGTERM handlers (idempotent).
void InstallStopSignalHandlers();

// 0 while no stop was asked for, else the signal that asked (SIGINT or
// SIGTERM). Async-signal-safe to read.
int PendingStopSignal();

// "SIGINT", "SIGTERM", or "signal N".
const char* StopSignalName(int signal_number);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_STOP_SIGNALS_H_
