// Fuzzes the policy file loader (common/policy: policy_toml.cc through
// Policy::FromToml and PolicyFile::Load, and the JSON snapshot of
// policy_json.cc): the input is the text of a policy file. Besides crashes,
// it checks that a bad file is an InvalidArgument naming the file, that the
// file on disk loads exactly when the text does, that the JSON snapshot of
// a loaded policy reads back to the same snapshot, and that the loaded
// rules (regexes, globs, options) judge a few lines without failing.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/policy/policy.h"

namespace {

namespace policy = termbridge::policy;

[[noreturn]] void Fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "policy_toml: %s\ninput: %.*s\n", what, static_cast<int>(input.size()),
               input.data());
  std::abort();
}

const std::string& PolicyPath() {
  static const std::string* path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/tb_fuzz_policy.XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    return new std::string(pattern + "/policy.toml");
  }();
  return *path;
}

void WriteAll(const std::string& path, std::string_view text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  for (size_t done = 0; done < text.size();) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  close(fd);
}

std::string Dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<policy::Policy> loaded = policy::Policy::FromToml(text, "fuzz.toml");
  if (!loaded.ok()) {
    if (loaded.status().code() != absl::StatusCode::kInvalidArgument ||
        loaded.status().message().substr(0, 10) != "fuzz.toml:") {
      std::fprintf(stderr, "status: %s\n", loaded.status().ToString().c_str());
      Fail("a bad policy file is not InvalidArgument(\"<file>:<line>: ...\")", text);
    }
  }

  // Loading compiles every rule's regex, so the file on disk is read for a
  // quarter of the inputs only (chosen by length).
  if (size % 4 == 0) {
    WriteAll(PolicyPath(), text);
    policy::PolicyFile file(PolicyPath());
    absl::Status st = file.Load();
    if (st.ok() != loaded.ok()) Fail("PolicyFile::Load and FromToml disagree", text);
    if (st.ok() && file.Current() == nullptr) Fail("a loaded policy file has no policy", text);
  }
  if (!loaded.ok()) return 0;

  nlohmann::json snapshot = loaded->ToJson();
  Dump(snapshot);
  absl::StatusOr<policy::Policy> back = policy::Policy::FromJson(snapshot);
  if (!back.ok()) {
    std::fprintf(stderr, "status: %s\n", back.status().ToString().c_str());
    Fail("the JSON snapshot of a loaded policy does not read back", text);
  }
  if (back->ToJson() != snapshot) Fail("the JSON snapshot changed on the way back", text);

  for (std::string_view line :
       {"make -j4 > build/log && sed -i s/a/b/ x.txt", "npm test; cat ~/.ssh/id_rsa"}) {
    Dump(loaded->Check(line).ToJson());
  }
  return 0;
}
