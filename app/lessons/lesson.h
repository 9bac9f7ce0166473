// Lesson: one lessons/NN-slug/lesson.md parsed into its front matter, steps (text, experiment,
// sweep, prediction, comparison, benchmark), retrieval practice and flashcards. The format is
// documented in lessons/README.md. QtCore and the engine's bench table only. See tests/lessons/tst_lessons_format.cpp.
#pragma once
#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

#include "jobs/bench_settings.h"

namespace paralab::lessons {

class Glossary;

// One answer of a choice prediction and the expression over metric paths that measures it.
struct Choice {
  QString label;   // what the learner picks, e.g. "rank 0"
  QString metric;  // e.g. "ranks[0].idle_ms + ranks[0].comm_ms" (as a comparison's metric)
};

// What the learner predicts before running: a number with the reference formula that gives it,
// or (`choices` not empty) one of several answers, with the measured answer the choice whose
// metric is largest (`pick` max) or smallest (min) over the run.
struct Prediction {
  QString ask;        // the question put to the learner
  QString formula;    // reference formula over `inputs` (formula.h's language)
  QJsonObject inputs; // name -> number, or "$flag": the value of that key in the step's experiment
  QString unit;       // of the predicted value ("×", "bytes", "ms", ...; "" for a pure number)
  QString reasoning;  // optional: the words behind the formula, shown with the reference value
  std::optional<double> expect;  // the value the text states, rounded as written (checked by tests)
  // A worked problem: a prediction in a step with nothing to run, its reasoning the worked
  // solution shown once the answer is locked.
  bool worked = false;
  // A choice prediction: no formula, inputs or numeric expect.
  QList<Choice> choices;
  QString pick;            // max | min
  QString over = "median"; // as a comparison's: first | last | median | mean over the steps
  int warmup = 2;          // steps left out of median / mean
  QString expectChoice;    // the label the reasoning gives
  int line = 0;
  bool isChoice() const { return !choices.isEmpty(); }
};

// What the comparison after the run shows as "measured": an expression over metric paths
// (lessons/reference/metrics.md) of the run's step JSON or, when the step has a sweep, of the
// sweep's JSON.
struct Compare {
  QString metric;   // e.g. "samples_per_s", "ranks[0].bytes_sent / 2^20", "points[ranks=8].speedup"
  QString over = "last";  // first | last step, or median | mean over the steps after `warmup`
  int warmup = 2;         // steps left out of median / mean (the first steps are slow)
  QString unit;
  QString explain;  // why prediction, reference and measurement differ
  int line = 0;
};

// A scaling sweep of the step's experiment: the same run at each rank count. Its `ranks` are a
// list, or sized to the machine the lesson is loaded on: "cores" (1, 2, 4, ... up to the cores)
// or "K*cores" (on past them to K x the cores), resolved by the engine's coresSizedRanks.
struct Sweep {
  QList<int> ranks;  // as run on this machine
  QString sizedTo;   // "cores", "2*cores", ...; "" for a listed sweep
  int cores = 0;     // the machine's cores it was sized to (0 for a listed sweep)
  int steps = 10;   // timed steps per point (median)
  int warmup = 2;   // untimed steps before them
  int line = 0;
};

// A benchmark of the step. With a `kind`, a teaching benchmark the step runs in the window and
// draws in the benchmark chart (engine/teach/: the code `paralab-bench` prints its tables
// from). With a `program`, a `paralab-bench` table the step only names (one not yet in the
// window, such as comm).
struct Bench {
  QString kind;         // one of benchKinds() (gemm-ladder, simd-width, ...); "" a program
  QJsonObject options;  // the block's other keys, each allowed for the kind (benchSettings)
  QString program;      // paralab-bench sub-command, where there is no kind
  QStringList args;     // its flags
  int line = 0;
};
// The kinds a ```bench block may name and the keys each takes, with their types, ranges,
// defaults and the kind or model they apply to, are the engine's table (jobs::benchSettings(),
// engine/jobs/bench_settings.cpp): gemm-ladder (size, threads, repeats), simd-width (repeats),
// false-sharing (threads, increments), latency (model mlp|gpt, max-batch, hidden, layers, and
// for the GPT seq and heads), roofline (precision, max-batch, hidden, layers, repeats), layouts
// (gpu, node-link, recompute, gpus, layers, hidden, heads, seq, vocab, batch, pp, min-tp, max-tp).
QStringList benchKinds();
// The block's own keys as the engine reads them: a whole number as an integer, a word as text.
jobs::BenchValues benchValues(const Bench& bench);
// The value of `key` in `bench` (its default where the block does not give it; 0 or "" for a
// key its kind does not take).
double benchOption(const Bench& bench, const QString& key);
QString benchWord(const Bench& bench, const QString& key);  // a key of words ("model")

struct Step {
  QString title;
  QString markdown;   // the step's text, without the blocks above and its needs line
  QStringList needs;  // capabilities this step needs beyond the lesson's (e.g. device:cuda)
  std::optional<QJsonObject> experiment;  // keys: paralab-run's flag names (engine/config.cpp)
  std::optional<Sweep> sweep;
  std::optional<Prediction> prediction;
  std::optional<Compare> compare;
  std::optional<Bench> bench;
  int line = 0;  // of its heading, 1-based
};

struct Card {
  QString q, a;
  int line = 0;
};

struct Lesson {
  QString path;   // the lesson.md it came from
  QString slug;   // its directory name, e.g. "02-amdahl"; the key of progress and cards
  int number = 0; // NN of the directory name
  QString title;
  QStringList objectives;
  int minutes = 0;
  QStringList needs;  // capabilities, e.g. strategy:sync, strategy:model-parallel, device:cuda
  QString intro;      // Markdown before the first step
  QList<Step> steps;
  QList<Card> retrieval;  // answered in writing before the model answer is shown
  QList<Card> cards;      // flashcards (flashcards.h schedules them)
};

struct ParseResult {
  std::optional<Lesson> lesson;
  QStringList errors;  // "lesson.md:12: prediction: 'formula' is missing", ...
};

// Parses the text of one lesson.md; `slug` is its directory name. Sweeps sized to the machine
// and the inputs "$cores" and "$sweep_max" are resolved for `cores` (0: this machine's,
// paralab::machineCores(); a number to see the lesson as a machine with that many would).
ParseResult parseLesson(const QString& text, const QString& slug, const QString& path = {},
                        int cores = 0);
// Where the lessons are: $PARALAB_LESSONS_DIR, the installed ones or the source tree's
// (paralab::dataDir in platform.h).
QString lessonsRoot();
// Reads and parses <dir>/lesson.md.
ParseResult loadLesson(const QString& lessonDir, int cores = 0);
// Every lessons/NN-*/lesson.md under `lessonsRoot`, in order of NN; errors of all of them.
struct LibraryResult {
  QList<Lesson> lessons;
  QStringList errors;
};
LibraryResult loadLessons(const QString& lessonsRoot, int cores = 0);

// [SECTION] Capabilities. A need is "kind:name"; the app gathers what the engine offers
// (engine_bridge.h: strategy:<name> for every row of the strategy table, device:cpu,
// device:cuda when a GPU is usable). A lesson or step whose needs are not all offered is
// "coming": shown, not run.
QStringList missingNeeds(const QStringList& needs, const QStringList& available);
// One line a learner can read: why this need is not met here.
QString describeMissing(const QString& need);
// The lesson's own needs and those of all its steps.
QStringList allNeeds(const Lesson& lesson);

// [SECTION] Predictions and comparisons.
// The reference value of a prediction: its formula over its inputs ("$flag" inputs read from
// `experiment`). nullopt with `error` naming the problem.
std::optional<double> referenceValue(const Prediction& p, const QJsonObject& experiment,
                                     QString* error = nullptr);
// The input values after resolving "$flag" references (for display beside the formula).
QHash<QString, double> resolvedInputs(const Prediction& p, const QJsonObject& experiment,
                                      QString* error = nullptr);
// A number at a metric path in a JSON object: "loss", "ranks[0].mem.params",
// "points[ranks=8].speedup" (an array element chosen by a field's value),
// "points[ranks=$cores].speedup" (the value a number of the object's top level: a sweep's
// `cores`), "points[first].step_ms", "points[last].speedup". Booleans count as 0/1.
std::optional<double> metricAt(const QJsonObject& root, const QString& path);
// The measured value of a comparison: over a run's step objects (each as `paralab-run --json`
// prints it), among the steps that report the metric; or of a sweep's object, where a fitted
// fraction (amdahl_p, gustafson_serial_fraction) outside 0..1 is no value: `error` starts
// "no fit:" and says what it means instead.
std::optional<double> measuredValue(const Compare& c, const QList<QJsonObject>& steps,
                                    QString* error = nullptr);
std::optional<double> measuredValue(const Compare& c, const QJsonObject& sweep,
                                    QString* error = nullptr);
// Where a step compares its sweep's fitted fraction (amdahl_p, gustafson_serial_fraction):
// what the fit stands on, "fitted on ranks 1–8, cores shared past 2" (the engine's fitBasis,
// for the ranks the sweep runs and the cores it runs them on); "" for any other step.
QString fitNote(const Step& s);

// What a run measured for a choice prediction: each choice's value (its metric as a comparison
// with the prediction's `over` and `warmup` reads it, measuredValue) and the answer, the index
// of the largest (pick max) or smallest (min); -1 with `error` when a value is missing or two
// choices tie.
struct ChoiceMeasurement {
  QList<double> values;  // in the order of the choices (NaN where a choice has no value)
  int answer = -1;
  QString error;
};
ChoiceMeasurement measuredChoice(const Prediction& p, const QList<QJsonObject>& steps);
ChoiceMeasurement measuredChoice(const Prediction& p, const QJsonObject& sweep);
// The answer among `values` that `p.pick` selects (shared by both above and by a measurement
// kept in the progress file).
ChoiceMeasurement choiceAnswer(const Prediction& p, const QList<double>& values);

// Glossary references written [[term]] or [[term|shown words]] in a text, in order.
QStringList glossaryReferences(const QString& markdown);
// A question, answer or card of lesson.md as rich text: one paragraph (the source's line breaks
// are not the text's), `code` in the code font, everything else escaped. With a glossary, the
// first occurrence of each of its terms (Glossary::findIn, outside code) is a link to
// "glossary:<term>", whose definition the panel shows on hover (Glossary::tooltip).
QString paragraphHtml(const QString& text, const Glossary* glossary = nullptr);

}  // namespace paralab::lessons
