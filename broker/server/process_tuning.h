// Process-wide settings the broker applies once, in main, before it serves.
// Kept out of BrokerServer so that embedding the server (tests, the bench)
// does not change the host process behind its back.
#ifndef TERMBRIDGE_BROKER_SERVER_PROCESS_TUNING_H_
#define TERMBRIDGE_BROKER_SERVER_PROCESS_TUNING_H_

namespace termbridge::broker {

// Makes glibc malloc keep freed memory for reuse instead of handing it back to
// the kernel after every large free. Attach moves output in frames of up to
// 1 MiB; gRPC serializes each into a fresh buffer and the receiving side reads
// into fresh slices. With glibc's defaults those buffers come from mmap or a
// heap top that is trimmed again, so every frame touched fresh pages: ~240
// page faults per MiB streamed, which halved the rate a reconnecting client
// replays the ring at. Heap memory above the trim threshold is still returned.
// Returns false if malloc refused a setting.
bool KeepFreedMemoryForReuse();

// Turns off abseil's lock-order (deadlock) checking in this process. Debian
// builds abseil in debug mode, where every absl::Mutex acquisition, the
// broker's and gRPC's alike, records the locks each thread holds in one
// global graph behind one global lock. Unit tests keep the check on; the
// shipped broker serves without it.
void SkipMutexDeadlockDetection();

}  // namespace termbridge::broker

#endif  // TERMBRIDGE_BROKER_SERVER_PROCESS_TUNING_H_
