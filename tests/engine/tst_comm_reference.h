// Serial references for the communicator tests (tst_comm_thread.cpp, tst_comm_mpi.cpp): each
// rank runs one collective on inputs every rank can compute, and checks its result against
// the serial answer. Inputs are small integers, so every sum is exact in float and any
// algorithm's order of additions must give the reference's bits exactly.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.h"

namespace paralab::commtest {

inline float inputValue(int rank, int64_t i) {
  return static_cast<float>(static_cast<int>((i * 7 + rank * 13) % 17) - 8);
}

inline std::vector<float> inputs(int rank, int64_t count, int64_t offset = 0) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[i] = inputValue(rank, offset + i);
  return v;
}

// op over ranks 0..n-1 of inputValue(rank, at), in rank order, then / n for an average.
inline float reduced(int n, int64_t at, ReduceOp op) {
  float acc = inputValue(0, at);
  for (int r = 1; r < n; ++r)
    acc = op == ReduceOp::Max ? std::max(acc, inputValue(r, at)) : acc + inputValue(r, at);
  return op == ReduceOp::Avg ? acc / static_cast<float>(n) : acc;
}

// Empty when got == want bit for bit, else where they first differ.
inline std::string firstMismatch(const std::vector<float>& got, const std::vector<float>& want,
                                 const std::string& what) {
  if (got.size() != want.size())
    return what + ": size " + std::to_string(got.size()) + " != " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i]))
      return what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
             ", expected " + std::to_string(want[i]);
  return {};
}

// Per-peer sizes for all-to-all-v: rank r sends countsFor(r, q, base) floats to rank q. Uneven,
// with some zeros, and different in each direction.
inline int64_t countsFor(int r, int q, int64_t base) { return ((r + 2 * q) % 3) * base / 2 + (r == q); }

// Runs collective `op` on rank `comm` and returns the first wrong element, or empty. `count` is
// the count argument of the call (see communicator.h). Covers allreduce-{naive,ring,default}
// (each reduce op, out of place and in place), reducescatter, allgather, broadcast, reduce,
// alltoall, alltoallv.
inline std::string runAndCheck(Communicator& comm, const std::string& op, int64_t count) {
  const int n = comm.size(), r = comm.rank();
  const ReduceOp reduceOps[] = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max};
  const char* reduceNames[] = {"sum", "avg", "max"};
  std::string err;
  if (op.rfind("allreduce", 0) == 0) {
    const AllReduceAlgo algo = op == "allreduce-naive"  ? AllReduceAlgo::Naive
                               : op == "allreduce-ring" ? AllReduceAlgo::Ring
                                                        : AllReduceAlgo::Default;
    for (int k = 0; k < 3 && err.empty(); ++k) {
      std::vector<float> want(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) want[i] = reduced(n, i, reduceOps[k]);
      const std::vector<float> in = inputs(r, count);
      std::vector<float> out(static_cast<size_t>(count), -99.0f);
      comm.allReduce(in.data(), out.data(), count, reduceOps[k], algo);
      err = firstMismatch(out, want, op + " " + reduceNames[k]);
      if (!err.empty()) break;
      std::vector<float> buf = inputs(r, count);  // in place
      comm.allReduce(buf.data(), buf.data(), count, reduceOps[k], algo);
      err = firstMismatch(buf, want, op + " " + reduceNames[k] + " in place");
    }
  } else if (op == "reducescatter") {
    for (int k = 0; k < 3 && err.empty(); ++k) {
      const std::vector<float> in = inputs(r, n * count);
      std::vector<float> out(static_cast<size_t>(count), -99.0f), want(out.size());
      for (int64_t i = 0; i < count; ++i) want[i] = reduced(n, r * count + i, reduceOps[k]);
      comm.reduceScatter(in.data(), out.data(), count, reduceOps[k]);
      err = firstMismatch(out, want, op + " " + reduceNames[k]);
    }
  } else if (op == "allgather") {
    const std::vector<float> in = inputs(r, count);
    std::vector<float> out(static_cast<size_t>(n * count), -99.0f), want(out.size());
    for (int q = 0; q < n; ++q)
      for (int64_t i = 0; i < count; ++i) want[q * count + i] = inputValue(q, i);
    comm.allGather(in.data(), out.data(), count);
    err = firstMismatch(out, want, op);
    if (err.empty()) {  // in place: our block already sits in the receive buffer
      std::vector<float> buf(static_cast<size_t>(n * count), -99.0f);
      std::copy(in.begin(), in.end(), buf.begin() + r * count);
      comm.allGather(buf.data() + r * count, buf.data(), count);
      err = firstMismatch(buf, want, op + " in place");
    }
  } else if (op == "broadcast") {
    const int root = n - 1;
    std::vector<float> buf = r == root ? inputs(root, count) : std::vector<float>(count, -99.0f);
    comm.broadcast(buf.data(), count, root);
    err = firstMismatch(buf, inputs(root, count), op);
  } else if (op == "reduce") {
    const int root = n / 2;
    for (int k = 0; k < 3 && err.empty(); ++k) {
      const std::vector<float> in = inputs(r, count);
      std::vector<float> out(static_cast<size_t>(count), -99.0f), want(out.size());
      for (int64_t i = 0; i < count; ++i) want[i] = reduced(n, i, reduceOps[k]);
      comm.reduce(in.data(), out.data(), count, root, reduceOps[k]);
      if (r == root) err = firstMismatch(out, want, op + " " + reduceNames[k]);
    }
  } else if (op == "alltoall") {
    // Block q of rank r's send buffer: inputValue(r, q*count + i). Rank r receives block r of q.
    const std::vector<float> in = inputs(r, n * count);
    std::vector<float> out(static_cast<size_t>(n * count), -99.0f), want(out.size());
    for (int q = 0; q < n; ++q)
      for (int64_t i = 0; i < count; ++i) want[q * count + i] = inputValue(q, r * count + i);
    comm.allToAll(in.data(), out.data(), count);
    err = firstMismatch(out, want, op);
  } else if (op == "alltoallv") {
    std::vector<int64_t> sc(n), rc(n);
    std::vector<float> in, want;
    const int64_t kStride = 4 * count + 8;  // block q of rank r: inputValue(r, q*kStride + i)
    for (int q = 0; q < n; ++q) {
      sc[q] = countsFor(r, q, count);
      rc[q] = countsFor(q, r, count);
      const std::vector<float> block = inputs(r, sc[q], q * kStride);
      in.insert(in.end(), block.begin(), block.end());
      const std::vector<float> from = inputs(q, rc[q], r * kStride);
      want.insert(want.end(), from.begin(), from.end());
    }
    std::vector<float> out(want.size(), -99.0f);
    comm.allToAllv(in.data(), sc, out.data(), rc);
    err = firstMismatch(out, want, op);
  } else {
    err = "unknown op " + op;
  }
  return err.empty() ? err : "rank " + std::to_string(r) + ": " + err;
}

inline const std::vector<std::string>& allOps() {
  static const std::vector<std::string> ops = {
      "allreduce-naive", "allreduce-ring", "allreduce-default", "reducescatter", "allgather",
      "broadcast",       "reduce",         "alltoall",          "alltoallv"};
  return ops;
}

}  // namespace paralab::commtest
