#include "reports/dashboard/history.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "reports/dashboard/config_diff.h"
#include "stats/order_statistics.h"

namespace cuvil::reports::dashboard {

namespace {

// What the history needs of each run's stored document, read once per run (SQLite's JSON1): the
// machine peak and the working directory.
struct RunExtras {
  double fp32_gflops = 0, mem_read_gbps = 0;
  std::string working_directory;
};

std::map<int64_t, RunExtras> run_extras(Database& db) {
  Statement select = db.prepare(
      "SELECT id, json_extract(document, '$.context.cuvil.machine_peak.fp32_gflops'), "
      "json_extract(document, '$.context.cuvil.machine_peak.mem_read_gbps'), "
      "json_extract(document, '$.context.cuvil.working_directory') FROM runs");
  std::map<int64_t, RunExtras> extras;
  while (select.step()) {
    RunExtras p;
    if (!select.is_null(1)) p.fp32_gflops = select.column_double(1);
    if (!select.is_null(2)) p.mem_read_gbps = select.column_double(2);
    if (!select.is_null(3)) p.working_directory = select.column_text(3);
    extras[select.column_int(0)] = p;
  }
  return extras;
}

// The benchmarks (run id, name) whose plans had bf16 or int8 products (the median entry's
// cuvil.reduced_precision_flops), with the %peak cuvil-bench stored for them (the median entry's
// pct_peak_flops: each part of the work against its own peak; 0 where a needed peak was not
// measured): the fp32 peak alone does not bound their work.
std::map<std::pair<int64_t, std::string>, double> reduced_precision_benchmarks(Database& db) {
  Statement select = db.prepare(
      "SELECT r.id, COALESCE(json_extract(e.value, '$.run_name'), json_extract(e.value, "
      "'$.name')), json_extract(e.value, '$.pct_peak_flops') FROM runs r, "
      "json_each(r.document, '$.benchmarks') e "
      "WHERE json_extract(e.value, '$.cuvil.reduced_precision_flops') > 0");
  std::map<std::pair<int64_t, std::string>, double> out;
  while (select.step()) {
    if (select.is_null(1)) continue;
    out[{select.column_int(0), select.column_text(1)}] =
        select.is_null(2) ? 0.0 : select.column_double(2);
  }
  return out;
}

// The stored text of every config, by hash.
std::map<std::string, std::string> config_texts(Database& db) {
  Statement select = db.prepare("SELECT hash, yaml FROM configs");
  std::map<std::string, std::string> texts;
  while (select.step()) texts[select.column_text(0)] = select.column_text(1);
  return texts;
}

// Marks each point whose config hash differs from the point before it, with what changed.
void mark_config_changes(BenchmarkHistory& h, const std::map<std::string, std::string>& texts) {
  for (size_t i = 1; i < h.points.size(); ++i) {
    HistoryPoint& p = h.points[i];
    const std::string& before = h.points[i - 1].config_hash;
    if (before.empty() || p.config_hash.empty() || before == p.config_hash) continue;
    p.config_changed = true;
    p.previous_config_hash = before;
    const auto text = [&](const std::string& hash) {
      const auto it = texts.find(hash);
      return it == texts.end() ? std::string() : it->second;
    };
    p.config_changes = config_changes(text(before), text(p.config_hash));
  }
}

double percent_of(double value, double peak) {
  return peak > 0 ? 100.0 * value / peak : 0.0;
}

}  // namespace

std::string BenchmarkHistory::key() const {
  std::string raw =
      name + "-" + target + "-t" + std::to_string(threads) + "-" + machine_fingerprint.substr(0, 8);
  for (char& c : raw) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    if (!safe) c = '_';
  }
  return raw;
}

std::vector<double> stored_samples(ResultsStore& store, int64_t benchmark_id) {
  Statement select =
      store.database().prepare("SELECT real_ns FROM samples WHERE benchmark_id = ?1 ORDER BY idx");
  select.bind(1, benchmark_id);
  std::vector<double> out;
  while (select.step()) out.push_back(select.column_double(0));
  return out;
}

std::vector<BenchmarkHistory> load_histories(ResultsStore& store) {
  Database& db = store.database();
  const std::map<int64_t, RunExtras> extras = run_extras(db);
  const std::map<std::pair<int64_t, std::string>, double> reduced =
      reduced_precision_benchmarks(db);
  Statement select = db.prepare(
      "SELECT b.id, b.run_id, b.name, b.suite, b.rung, r.target, r.threads, m.fingerprint, "
      "       m.host, m.cpu_model, r.started_at, r.git_commit, r.command_line, b.repetitions, "
      "       b.median_ns, b.gflops, b.gbps, b.noisy, COALESCE(c.hash, '') "
      "FROM benchmarks b JOIN runs r ON r.id = b.run_id JOIN machines m ON m.id = r.machine_id "
      "LEFT JOIN configs c ON c.id = r.config_id "
      "ORDER BY b.run_id, b.id");
  std::vector<BenchmarkHistory> histories;
  std::map<std::tuple<std::string, std::string, int, std::string>, size_t> index_of;
  std::map<std::string, size_t> suite_order;
  while (select.step()) {
    const std::string name = select.column_text(2);
    const std::string target = select.column_text(5);
    const int threads = static_cast<int>(select.column_int(6));
    const std::string fingerprint = select.column_text(7);
    const auto key = std::make_tuple(name, target, threads, fingerprint);
    auto it = index_of.find(key);
    if (it == index_of.end()) {
      BenchmarkHistory h;
      h.name = name;
      h.suite = select.column_text(3);
      h.rung = select.column_text(4);
      h.target = target;
      h.threads = threads;
      h.machine_fingerprint = fingerprint;
      h.host = select.column_text(8);
      h.cpu_model = select.column_text(9);
      suite_order.try_emplace(h.suite, suite_order.size());
      it = index_of.emplace(key, histories.size()).first;
      histories.push_back(std::move(h));
    }
    HistoryPoint p;
    p.benchmark_id = select.column_int(0);
    p.run_id = select.column_int(1);
    p.host = select.column_text(8);
    p.cpu_model = select.column_text(9);
    p.date = select.column_text(10);
    p.commit = select.column_text(11);
    p.command_line = select.column_text(12);
    p.samples = select.column_int(13);
    p.median_ns = select.column_double(14);
    p.gflops = select.column_double(15);
    p.gbps = select.column_double(16);
    p.noisy = select.column_int(17) != 0;
    p.config_hash = select.column_text(18);
    const auto extra = extras.find(p.run_id);
    if (extra != extras.end()) {
      const auto stored = reduced.find({p.run_id, name});
      p.pct_peak_flops = stored != reduced.end() ? stored->second
                                                 : percent_of(p.gflops, extra->second.fp32_gflops);
      p.pct_peak_bw = percent_of(p.gbps, extra->second.mem_read_gbps);
      p.working_directory = extra->second.working_directory;
    }
    std::vector<double> sorted = stored_samples(store, p.benchmark_id);
    std::sort(sorted.begin(), sorted.end());
    p.low_ns =
        sorted.empty() ? p.median_ns : stats::nearest_rank_percentile(sorted, kSpreadLowPercent);
    p.high_ns =
        sorted.empty() ? p.median_ns : stats::nearest_rank_percentile(sorted, kSpreadHighPercent);
    histories[it->second].points.push_back(std::move(p));
  }
  const std::map<std::string, std::string> texts = config_texts(db);
  for (BenchmarkHistory& h : histories) mark_config_changes(h, texts);
  std::stable_sort(histories.begin(), histories.end(),
                   [&](const BenchmarkHistory& a, const BenchmarkHistory& b) {
                     return suite_order.at(a.suite) < suite_order.at(b.suite);
                   });
  return histories;
}

}  // namespace cuvil::reports::dashboard
