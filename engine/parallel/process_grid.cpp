// The pp x dp x cp x tp mesh and its sub-communicators (see process_grid.h).
#include "parallel/process_grid.h"

#include "comm/communicator.h"

namespace paralab {

std::optional<std::string> ProcessGrid::validate(const GridShape& s, int worldSize) {
  if (s.dp < 1 || s.tp < 1 || s.pp < 1 || s.ep < 1 || s.cp < 1)
    return "dp, tp, pp, cp and ep must be at least 1";
  if (s.world() != worldSize)
    return "ranks: dp x tp x pp" + std::string(s.cp > 1 ? " x cp" : "") + " = " +
           std::to_string(s.dp) + " x " + std::to_string(s.tp) + " x " + std::to_string(s.pp) +
           (s.cp > 1 ? " x " + std::to_string(s.cp) : "") + " = " + std::to_string(s.world()) +
           " must equal the number of ranks (" + std::to_string(worldSize) + ")";
  if (s.dp % s.ep != 0)
    return "ep: " + std::to_string(s.ep) + " must divide dp (" + std::to_string(s.dp) +
           "): expert groups are carved out of the data-parallel ranks";
  return std::nullopt;
}

int ProcessGrid::rankOf(const GridShape& s, int dp, int tp, int pp, int cp) {
  return ((pp * s.dp + dp) * s.cp + cp) * s.tp + tp;
}

GridCoords ProcessGrid::coordsOf(const GridShape& s, int rank) {
  GridCoords c;
  c.tp = rank % s.tp;
  c.cp = (rank / s.tp) % s.cp;
  c.dp = (rank / (s.tp * s.cp)) % s.dp;
  c.pp = rank / (s.tp * s.cp * s.dp);
  c.ep = c.dp % s.ep;
  c.epGroup = c.dp / s.ep;
  return c;
}

ProcessGrid::ProcessGrid(const GridShape& shape, Communicator& world)
    : m_shape(shape), m_coords(coordsOf(shape, world.rank())), m_world(&world) {
  if (auto err = validate(shape, world.size())) throw std::invalid_argument(*err);
  const GridCoords& c = m_coords;
  const int T = shape.tp, D = shape.dp, K = shape.cp;
  // split(color, key): equal colors form a group, ordered by key.
  m_dp = world.split((c.pp * K + c.cp) * T + c.tp, c.dp, "dp");
  m_tp = world.split((c.pp * D + c.dp) * K + c.cp, c.tp, "tp");
  m_pp = world.split((c.dp * K + c.cp) * T + c.tp, c.pp, "pp");
  if (K > 1) {  // two more splits, only where there is a cp axis (every rank takes part)
    m_cp = world.split((c.pp * D + c.dp) * T + c.tp, c.cp, "cp");
    m_replicas = world.split(c.pp * T + c.tp, c.dp * K + c.cp, "dp-cp");
  }
  m_ep = world.split(((c.pp * K + c.cp) * T + c.tp) * (D / shape.ep) + c.epGroup, c.ep, "ep");
  m_expertDp =
      world.split(((c.pp * K + c.cp) * T + c.tp) * shape.ep + c.ep, c.epGroup, "expert-dp");
}

ProcessGrid::~ProcessGrid() = default;

}  // namespace paralab
