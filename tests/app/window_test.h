// What the window's test suites share: a quick run's settings and a named child widget.
#pragma once
#include <QObject>

#include "panels/config_panel.h"

namespace paralab::test {

// Small and in memory: a step takes well under a millisecond on one core.
inline RunConfig quickConfig(int steps, int ranks = 1) {
  RunConfig c = ConfigPanel::defaults();
  c.dataset = "synthetic";
  c.hidden = 32;
  c.layers = 2;
  c.batch = 64;
  c.steps = steps;
  c.evalEvery = 10;
  c.evalSamples = 256;
  c.ranks = ranks;
  return c;
}

template <class W>
W* child(QObject* parent, const char* name) {
  return parent->findChild<W*>(name);
}

}  // namespace paralab::test
