// The settings table (engine/schema.h): every setting reads the same from a flag and from a
// --config file, refuses what it does not allow naming itself, and says where it does not
// apply from settings above it only, so the window can never lock two controls together.
// Run: ctest -R tst_schema
#include <CLI/CLI.hpp>
#include <QtTest>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "cli/run_options.h"
#include "schema.h"

using namespace paralab;

namespace {

// A few values each setting allows in `c` (its choices, or points of its range).
std::vector<SettingValue> someValues(const Setting& s, const RunConfig& c) {
  std::vector<SettingValue> out;
  if (s.choices) {
    for (const SettingChoice& ch : s.choices(c)) out.push_back(parseValue(s, ch.value));
  } else if (s.type == SettingType::Switch) {
    out = {false, true};
  } else if (s.type == SettingType::Integer) {
    const double hi = s.maxOf ? std::min(s.max, s.maxOf(c)) : s.max;
    for (double v : {s.min, s.min + 1, 2.0, 4.0, hi})
      if (v >= s.min && v <= hi) out.push_back(int64_t(v));
  } else if (s.type == SettingType::Real) {
    for (double v : {s.min, 0.5, 1.0, s.max})
      if (v <= s.max && v >= s.min && !(s.minOpen && v == s.min)) out.push_back(v);
  }
  return out;
}

// A random configuration every setting of which holds an allowed value.
RunConfig randomConfig(std::mt19937& rng) {
  RunConfig c;
  for (const Setting& s : runSettings()) {
    const auto values = someValues(s, c);
    if (values.empty()) continue;
    s.set(c, values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(rng)]);
  }
  return c;
}

}  // namespace

class TstSchema : public QObject {
  Q_OBJECT
 private slots:
  void everySettingIsDescribed() {
    std::set<std::string> keys;
    for (const Setting& s : runSettings()) {
      QVERIFY2(keys.insert(s.key).second, s.key.c_str());  // one row per key
      QVERIFY2(!s.help.empty(), s.key.c_str());
      QVERIFY2(s.get && s.set, s.key.c_str());
      if (s.inWindow) {
        QVERIFY2(!s.label.empty(), s.key.c_str());
        const auto& groups = settingGroups();
        QVERIFY2(std::find(groups.begin(), groups.end(), s.group) != groups.end(), s.key.c_str());
      }
      // The default is allowed and applies or is neutral.
      QVERIFY2(!s.check(RunConfig{}), s.check(RunConfig{}).value_or("").c_str());
    }
    QVERIFY(!RunConfig{}.validate());
  }

  // A value written by --config and read back, and typed as a flag, is the same value.
  void flagsAndFilesAgree() {
    std::mt19937 rng(7);
    for (int round = 0; round < 50; ++round) {
      const RunConfig c = randomConfig(rng);
      RunConfig fromFile;
      applyJson(fromFile, c.toJson());
      QCOMPARE(fromFile.toJson(), c.toJson());
      std::vector<std::string> args = {"prog"};
      for (const Setting& s : runSettings()) {
        if (s.type == SettingType::Switch) {
          args.push_back(std::get<bool>(s.get(c)) ? "--" + s.key : "--no-" + s.key);
        } else {
          args.push_back("--" + s.key);
          args.push_back(formatValue(s.get(c)));
        }
      }
      CLI::App app;
      RunConfig fromFlags;
      addRunConfigOptions(app, fromFlags);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      app.parse(int(argv.size()), argv.data());
      QCOMPARE(fromFlags.toJson(), c.toJson());
    }
  }

  // Each kind of bad value is refused in one line that starts with the key: a wrong type as it
  // is read, a value out of range by validate().
  void badValuesNameTheKey() {
    for (const Setting& s : runSettings()) {
      const std::string k = s.key + ": ";
      std::vector<nlohmann::json> bad;
      std::vector<std::string> badText = {""};
      switch (s.type) {
        case SettingType::Switch:
          bad = {1, "yes", nullptr};
          badText = {"", "yes"};
          break;
        case SettingType::Integer:
          bad = {true, 2.5, "3", nullptr, nlohmann::json::array()};
          badText = {"", "3x", "2.5", " 3", "99999999999999999999"};
          if (!s.choices)
            bad.push_back(s.max + 1), badText.push_back(std::to_string(int64_t(s.max) + 1));
          break;
        case SettingType::Real:
          bad = {true, "0.5", nullptr, s.max * 2};
          badText = {"", "abc", "nan", "1e999"};
          break;
        case SettingType::Text:
          bad = {3, true, "", nlohmann::json::object()};
          break;
      }
      for (const nlohmann::json& j : bad) {
        RunConfig c;
        try {
          applyJson(c, {{s.key, j}});
          // A text outside the choices is read, then refused by validate().
          const auto err = c.validate();
          QVERIFY2(err && err->rfind(k, 0) == 0, (s.key + " accepted " + j.dump()).c_str());
        } catch (const ConfigError& e) {
          QVERIFY2(std::string(e.what()).rfind(k, 0) == 0, e.what());
        }
      }
      for (const std::string& text : badText) {
        RunConfig c;
        try {
          s.set(c, parseValue(s, text));
          const auto err = c.validate();  // in the field's type, out of the setting's range
          QVERIFY2(err && err->rfind(k, 0) == 0,
                   ("--" + s.key + " accepted '" + text + "'").c_str());
        } catch (const ConfigError& e) {
          QVERIFY2(std::string(e.what()).rfind(k, 0) == 0, e.what());
        }
      }
    }
  }

  // Whether a setting applies depends on the settings above it only: changing any setting
  // below never changes the answer. That is what lets the window settle every control in one
  // walk, so no two controls can lock each other.
  void applicabilityReadsOnlyEarlierSettings() {
    std::mt19937 rng(11);
    const auto& table = runSettings();
    int checked = 0;
    for (int round = 0; round < 40; ++round) {
      const RunConfig base = randomConfig(rng);
      for (size_t i = 0; i < table.size(); ++i) {
        if (!table[i].notApplicable) continue;
        const auto before = table[i].notApplicable(base);
        for (size_t j = i + 1; j < table.size(); ++j)
          for (const SettingValue& v : someValues(table[j], base)) {
            RunConfig c = base;
            table[j].set(c, v);
            QVERIFY2(table[i].notApplicable(c) == before,
                     (table[i].key + " changes with " + table[j].key).c_str());
            ++checked;
          }
      }
    }
    qInfo("%d (setting, later setting, value) cases", checked);
  }

  // The settings in effect never hold a value where it does not apply; serial execution is one
  // rank in the plain layout.
  void settingsInEffectApply() {
    std::mt19937 rng(3);
    for (int round = 0; round < 200; ++round) {
      const RunConfig shown = randomConfig(rng);
      for (bool serial : {false, true}) {
        const SettingsInEffect e = settingsInEffect(shown, serial);
        for (const Setting& s : runSettings())
          QVERIFY2(!inapplicable(s, e.config), inapplicable(s, e.config)->c_str());
        if (serial) {
          QCOMPARE(e.config.ranks, 1);
          QCOMPARE(e.config.tp * e.config.pp, 1);
          QCOMPARE(e.config.strategy, std::string("sync"));
          QVERIFY(e.why("tp") && e.why("tp")->find("serial") != std::string::npos);
        }
      }
    }
  }

  // A setting given where it does not apply is refused, naming why.
  void inapplicableIsRefused_data() {
    QTest::addColumn<QString>("json");
    QTest::addColumn<QString>("message");
    QTest::newRow("zero under gossip")
        << R"({"strategy": "gossip", "zero": 2})"
        << "zero: ZeRO stages apply to --strategy sync only";
    QTest::newRow("tp under hogwild (the layout's own rule)")
        << R"({"strategy": "hogwild", "ranks": 2, "tp": 2})"
        << "strategy: tensor and pipeline parallelism compose with --strategy sync only";
    QTest::newRow("sp without tp") << R"({"sp": true})"
                                   << "sp: sequence parallelism needs";
    QTest::newRow("link under mpi") << R"({"backend": "mpi", "link": "pcie"})"
                                    << "link: emulated links need --backend thread";
  }
  void inapplicableIsRefused() {
    QFETCH(QString, json);
    QFETCH(QString, message);
    RunConfig c;
    c.dataset = "synthetic";
    applyJson(c, nlohmann::json::parse(json.toStdString()));
    const auto err = c.validate();
    QVERIFY(err);
    QVERIFY2(QString::fromStdString(*err).startsWith(message), err->c_str());
  }

  // A parameter of a choice not made is kept and has no effect (a --config file written for
  // another strategy may hold it); the window hides or disables its control, and says why.
  void partOfAChoiceIsIgnoredElsewhere() {
    RunConfig c;
    c.dataset = "synthetic";
    applyJson(c, nlohmann::json::parse(
                     R"({"topology": "random", "servers": 1, "experts": 8, "microbatches": 4, "bucket-mb": 2})"));
    QVERIFY2(!c.validate(), c.validate().value_or("").c_str());
    const SettingsInEffect e = settingsInEffect(c, false);
    for (const char* key : {"topology", "experts", "microbatches"}) {
      QVERIFY2(e.why(key), key);
      QVERIFY(findSetting(key)->isDefault(e.config));
    }
  }

  // The window hands a run the settings in effect, and its mpirun job passes every setting
  // that differs from its default as a flag (app/job_command.cpp), the model and data set
  // always: such a command is never refused as a setting given where it does not apply.
  void settingsInEffectAreNeverRefusedAsGiven() {
    std::mt19937 rng(5);
    for (int round = 0; round < 200; ++round) {
      const RunConfig c = settingsInEffect(randomConfig(rng), false).config;
      std::set<std::string> flags = {"model", "dataset"};
      for (const Setting& s : runSettings())
        if (!s.isDefault(c)) flags.insert(s.key);
      const auto why = refusedAsGiven(c, flags, {});
      QVERIFY2(!why, why->c_str());
    }
  }

  // A parameter of a choice given where the choice is not made: a flag always (typing it says
  // it should act), a key of a hand-written file when it holds a value of its own; a saved
  // configuration (every setting's key) carries other models' keys quietly.
  void givenWhereItDoesNotApply() {
    RunConfig c;
    c.recompute = Recompute::Full;
    QCOMPARE(refusedAsGiven(c, {"recompute"}, {}).value_or(""),
             std::string("recompute: belongs to the GPT (--model gpt)"));
    QCOMPARE(refusedAsGiven(c, {}, {"recompute"}).value_or(""),
             std::string("recompute: belongs to the GPT (--model gpt)"));
    QVERIFY(!refusedAsGiven(c, {}, {}));  // in effect, not given: validate()'s to keep quiet
    std::set<std::string> every;
    for (const Setting& s : runSettings()) every.insert(s.key);
    QVERIFY(isSavedConfig(every));
    QVERIFY(!refusedAsGiven(c, {}, every));
    QVERIFY(refusedAsGiven(c, {"recompute"}, every));
    RunConfig byDefault;
    QVERIFY(!refusedAsGiven(byDefault, {}, {"heads", "schedule", "topology"}));
    QVERIFY(refusedAsGiven(byDefault, {"heads"}, {}));
    // Not a parameter of a choice: at its default it asks for nothing (--no-sp without --tp).
    QVERIFY(!refusedAsGiven(byDefault, {"sp", "tp", "zero"}, {}));
  }

  // paralab-run's program flags are rows of the schema too, owned by the program: never a key
  // of a run's configuration (a --config file, RunConfig::toJson).
  void programFlagsAreATable() {
    for (const char* key : {"sweep", "latency-sweep", "trace", "json", "save", "resume",
                            "control", "project", "sample"})
      QVERIFY2(findProgramSetting(key), key);
    const nlohmann::json saved = RunConfig{}.toJson();
    for (const Setting& s : programSettings()) {
      QCOMPARE(s.owner, std::string("program"));
      QVERIFY2(!s.help.empty() && !s.inWindow, s.key.c_str());
      QVERIFY2(!findSetting(s.key) && !saved.contains(s.key), s.key.c_str());
    }
    for (const Setting& s : runSettings()) QCOMPARE(s.owner, std::string("run"));
    RunConfig c;  // a program flag's value travels in the configuration only until it is taken
    findProgramSetting("trace")->set(c, std::string("t.json"));
    findProgramSetting("sweep")->set(c, std::string("ranks=1,2"));
    QCOMPARE(programRefusal(c).value_or(""),
             std::string("trace: records a training run (not a sweep)"));
    const ProgramFlags flags = takeProgramFlags(c);
    QCOMPARE(flags.trace, std::string("t.json"));
    QVERIFY(c.extra.empty());
  }

  // What cannot change under a running training is the table's word, not a list elsewhere.
  // The model, the device and the backend are enums: their words and the window's entries are
  // one table each (run_choices.h), JSON writes the words, and a word none of them holds is
  // named by validate() as any bad choice is.
  void enumChoicesComeFromTheirTable() {
    const Setting* model = findSetting("model");
    QCOMPARE(int(model->type), int(SettingType::Text));
    const std::vector<SettingChoice> choices = model->choices(RunConfig{});
    QCOMPARE(choices.size(), std::size(kModelKinds));
    for (size_t i = 0; i < choices.size(); ++i) {
      QCOMPARE(choices[i].value, std::string(kModelKinds[i].name));
      QCOMPARE(choices[i].label, std::string(kModelKinds[i].label));
    }
    RunConfig c;
    model->set(c, std::string("gpt"));
    findSetting("device")->set(c, std::string("cuda"));
    findSetting("backend")->set(c, std::string("nccl"));
    QVERIFY(c.model == ModelKind::Gpt && c.device == Device::Cuda && c.backend == Backend::Nccl);
    const nlohmann::json j = c.toJson();
    QCOMPARE(j["model"], "gpt");
    QCOMPARE(j["device"], "cuda");
    QCOMPARE(j["backend"], "nccl");
    RunConfig bad;
    model->set(bad, std::string("resnet"));
    QCOMPARE(bad.validate().value_or(""),
             std::string("model: 'resnet' is not one of mlp, moe, gpt"));
    model->set(bad, std::string("moe"));
    QVERIFY(bad.model == ModelKind::Moe && bad.extra.empty());
  }

  void fixedPerRunSettings() {
    std::set<std::string> fixed;
    for (const Setting& s : runSettings())
      if (!s.live) fixed.insert(s.key);
    for (const char* k : {"model", "hidden", "layers", "dataset", "optimizer", "seed", "experts"})
      QVERIFY2(fixed.count(k), k);
    for (const char* k : {"ranks", "strategy", "zero", "tp", "pp", "link", "lr"})
      QVERIFY2(!fixed.count(k), k);
  }
};

QTEST_GUILESS_MAIN(TstSchema)
#include "tst_schema.moc"
