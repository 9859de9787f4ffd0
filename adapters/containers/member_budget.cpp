#include "adapters/containers/member_budget.hpp"

namespace ingestd {

result<void> member_budget::count_entry(uint64_t bytes) {
  if (static_cast<int>(++entries_) > limits_.max_members)
    return error::make_permanent("container.too_many_members",
                                 "more than " + std::to_string(limits_.max_members)
                                     + " members, MIME parts counted (containers.max_members)");
  total_ += bytes;
  if (total_ > limits_.max_total_bytes)
    return error::make_permanent("container.too_large",
                                 "the members hold more than "
                                     + std::to_string(limits_.max_total_bytes)
                                     + " bytes (containers.max_total_bytes)");
  return {};
}

result<void> member_budget::add(std::string name, std::string bytes) {
  ++count_;
  if (auto r = count_entry(bytes.size()); !r)
    return r;
  if (bytes.size() > limits_.max_member_bytes) {
    out_.problems.push_back("member \"" + name + "\" is larger than "
                            + std::to_string(limits_.max_member_bytes)
                            + " bytes (containers.max_member_bytes): skipped");
    return {};
  }
  if (bytes.empty()) {
    out_.problems.push_back("member \"" + name + "\" is empty: skipped");
    return {};
  }
  out_.members.push_back(unpacked_member{std::move(name), std::move(bytes)});
  return {};
}

std::string member_file_name(std::string name) {
  auto slash = name.find_last_of("/\\");
  if (slash != std::string::npos)
    name.erase(0, slash + 1);
  if (name == "." || name == "..")
    name.clear();
  return name;
}

} // namespace ingestd
