// termbridge-git: see git_guard.h.
#include "broker/git_guard/git_guard.h"

int main(int argc, char** argv) { return termbridge::git_guard::Main(argc, argv); }
