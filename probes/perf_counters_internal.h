// Helpers shared by the counters and the sampler (not part of the probes API).
#pragma once

#include <linux/perf_event.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace cuvil::probes::detail {

int perf_event_open(perf_event_attr* attr, pid_t tid, int cpu, int group_fd, unsigned long flags);
// The ids of this process's threads now (/proc/self/task).
std::vector<pid_t> thread_ids();
pid_t current_thread_id();
// "ENOENT (No such file or directory)".
std::string errno_text(int error_number);
// Initialises libpfm4 once; throws UserError when it cannot.
void ensure_libpfm();
// Encodes a user's event name with libpfm4 for perf_event_open at the privilege levels the
// kernel allows; UserError naming the event when libpfm4 does not know it.
perf_event_attr encode_event(const std::string& name);
bool is_hardware(const perf_event_attr& attr);
// Whether the kernel exposes a hardware (core) PMU at all: /sys/bus/event_source/devices/cpu*.
bool kernel_has_core_pmu();

}  // namespace cuvil::probes::detail
