// vnfs test support: one row of the reliability table (docs/hardening.md). A test that
// tries the server or the client against faults, hostile peers or load prints a row with
// what it tried, how much of it, what it checked and what came out — the figures of this
// run. scripts/reliability_table.py collects the rows from CTest's logs
// (build/PRESET/Testing/Temporary/LastTest.log) and writes the table; nobody writes it by
// hand.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace vnfs::test {

/// Prints `vnfs-reliability: {"test": ..., "size": ..., "checked": ..., "result": ...}` on
/// stdout, as one line of JSON (the strings escaped).
inline void record_reliability(std::string_view test, std::string_view size, std::string_view checked,
                               std::string_view result) {
  auto quoted = [](std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
      if (c == '"' || c == '\\') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      out += c;
    }
    return out + "\"";
  };
  std::printf("vnfs-reliability: {\"test\": %s, \"size\": %s, \"checked\": %s, \"result\": %s}\n", quoted(test).c_str(),
              quoted(size).c_str(), quoted(checked).c_str(), quoted(result).c_str());
  std::fflush(stdout);
}

}  // namespace vnfs::test
