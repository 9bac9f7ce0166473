// A schedule written as a table (schedule_file.h): reading and writing its cells and its CSV,
// and the file as --schedule FILE takes it. The checker is schedule_check.cpp.
// Try: paralab-run --pp 2 --microbatches 4 --schedule my.csv (a file the window's grid editor
// saves); see tests/engine/tst_schedule_file.cpp.
#include "parallel/pipeline/schedule_file.h"

#include <cctype>
#include <charconv>

#include "config.h"  // ConfigError
#include "read_file.h"

namespace paralab {

namespace {

std::string_view trimmed(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '"'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// The digits at the front of `s`, taken off it; nothing when there are none or too many.
std::optional<int> number(std::string_view& s) {
  size_t k = 0;
  while (k < s.size() && std::isdigit(static_cast<unsigned char>(s[k]))) ++k;
  int v = 0;
  if (k == 0 || std::from_chars(s.data(), s.data() + k, v).ec != std::errc()) return std::nullopt;
  s.remove_prefix(k);
  return v;
}

}  // namespace

bool isScheduleFile(std::string_view value) {
  return value.find('/') != std::string_view::npos ||
         (value.size() > 4 && value.substr(value.size() - 4) == ".csv");
}

std::optional<ScheduleCell> parseScheduleCell(std::string_view text, int rank, int stages,
                                              std::string* why) {
  const auto fail = [&](std::string w) -> std::optional<ScheduleCell> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  std::string_view s = trimmed(text);
  if (s.empty()) return ScheduleCell{};
  if (s.find("SEND") != std::string_view::npos || s.find("RECV") != std::string_view::npos)
    return fail("the file holds computes only (F, B, I, W); its sends and receives are derived");
  // torch's form: the virtual stage first ("5F3").
  const std::optional<int> stage = number(s);
  if (s.empty())
    return fail("not an action (allowed: F, B, I or W and a micro-batch: F0, B3.1, 5W2)");
  ScheduleCell c;
  c.kind = char(std::toupper(static_cast<unsigned char>(s.front())));
  s.remove_prefix(1);
  const std::optional<int> micro = number(s);
  if ((c.kind != 'F' && c.kind != 'B' && c.kind != 'I' && c.kind != 'W') || !micro)
    return fail("not an action (allowed: F, B, I or W and a micro-batch: F0, B3.1, 5W2)");
  c.micro = *micro;
  if (!s.empty() && s.front() == '.') {
    s.remove_prefix(1);
    const std::optional<int> chunk = number(s);
    if (!chunk || stage)
      return fail("not an action (a chunk after a dot, F3.1, or a stage first, 5F3)");
    c.chunk = *chunk;
  }
  if (!s.empty())
    return fail("not an action (allowed: F, B, I or W and a micro-batch: F0, B3.1, 5W2)");
  if (stage) {
    if (*stage % stages != rank)
      return fail("virtual stage " + std::to_string(*stage) + " is on rank " +
                  std::to_string(*stage % stages) + " (virtual stage = chunk x pp + rank)");
    c.chunk = *stage / stages;
  }
  return c;
}

std::string scheduleCellText(const ScheduleCell& c, int chunks) {
  if (c.empty()) return "";
  std::string out(1, c.kind);
  out += std::to_string(c.micro);
  if (chunks > 1 || c.chunk != 0) {
    out += '.';
    out += std::to_string(c.chunk);
  }
  return out;
}

std::optional<ScheduleGrid> parseScheduleCsv(std::string_view text, int stages, std::string* why) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // a spreadsheet's BOM
  ScheduleGrid grid;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (trimmed(line).empty() || trimmed(line).front() == '#') continue;
    const int rank = int(grid.size());
    auto& row = grid.emplace_back();
    for (size_t at = 0;;) {
      const size_t comma = line.find(',', at);
      const std::string_view cell =
          line.substr(at, comma == std::string_view::npos ? line.npos : comma - at);
      std::string bad;
      const std::optional<ScheduleCell> c = parseScheduleCell(cell, rank, stages, &bad);
      if (!c) {
        if (why)
          *why = "rank " + std::to_string(rank) + ", action " + std::to_string(row.size() + 1) +
                 " ('" + std::string(trimmed(cell)) + "'): " + bad;
        return std::nullopt;
      }
      row.push_back(*c);
      if (comma == std::string_view::npos) break;
      at = comma + 1;
    }
    while (!row.empty() && row.back().empty()) row.pop_back();
  }
  return grid;
}

std::string scheduleCsv(const ScheduleGrid& grid, int chunks) {
  std::string out =
      "# A pipeline schedule: one line per rank (pp index 0 first), one cell per time slot.\n"
      "# F forward, B backward (its input half where the rank also holds W of the micro-batch),\n"
      "# W weight gradient, I input half; F3.1: micro-batch 3 on chunk 1. Transfers are derived.\n";
  for (const auto& row : grid) {
    size_t used = row.size();
    while (used > 0 && row[used - 1].empty()) --used;
    for (size_t j = 0; j < used; ++j) {
      if (j) out += ',';
      out += scheduleCellText(row[j], chunks);
    }
    out += "\n";
  }
  return out;
}

std::optional<std::string> scheduleFileRefusal(const std::string& path, const PipeShape& shape) {
  const std::string head = "schedule file " + path + ": ";
  std::string why;
  const std::optional<std::string> text = readWholeFile(path, why);
  if (!text) return head + "cannot be read (" + why + ")";
  const std::optional<ScheduleGrid> grid = parseScheduleCsv(*text, shape.stages, &why);
  if (!grid) return head + why;
  const ScheduleCheck check = checkSchedule(*grid, shape);
  if (check.fault) return head + *check.fault;
  return std::nullopt;
}

std::vector<PipeStep> scheduleFileSteps(const std::string& path, const PipeShape& shape) {
  std::string why;
  const std::optional<std::string> text = readWholeFile(path, why);
  if (!text) throw ConfigError("schedule file " + path + ": cannot be read (" + why + ")");
  const std::optional<ScheduleGrid> grid = parseScheduleCsv(*text, shape.stages, &why);
  if (!grid) throw ConfigError("schedule file " + path + ": " + why);
  ScheduleCheck check = checkSchedule(*grid, shape);
  if (check.fault) throw ConfigError("schedule file " + path + ": " + *check.fault);
  return std::move(check.plan[size_t(shape.stage)]);
}

std::vector<PipeStep> pipelineSteps(const std::string& schedule, const PipeShape& shape) {
  if (isScheduleFile(schedule)) return scheduleFileSteps(schedule, shape);
  return pipelineSchedule(pipeScheduleNamed(schedule).schedule, shape);
}

}  // namespace paralab
