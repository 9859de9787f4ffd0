// `ingestd queues create`: creates every queue the configuration names.
#include <cstdio>

#include "app/cli.hpp"
#include "app/queues.hpp"

namespace ingestd::cli {

int queues_command(const arguments& args) {
  if (args.positional.size() != 1 || args.positional[0] != "create") {
    std::fputs("usage: ingestd queues create\n"
               "  creates each enabled stage's queue and its dead-letter queue with the redrive\n"
               "  policy (queue.backend: SQS or the Postgres queue); safe to run again\n",
               stderr);
    return usage;
  }
  auto cfg = load_or_report(args);
  if (!cfg)
    return failure;
  auto made = create_queues(*cfg);
  if (!made) {
    std::fprintf(stderr, "ingestd queues create: %s\n", made.error().describe().c_str());
    return failure;
  }
  for (auto& line : *made)
    std::printf("%s\n", line.c_str());
  return ok;
}

} // namespace ingestd::cli
