// The join of GPU activities to their launches (ingest/launch_join.h): the
// cases the two views' rules tell apart, out-of-order files, and random
// files against a plain model of the rules as the readers applied them event
// by event before the join (std::map and std::multimap, no table of our own).
#include "ingest/launch_join.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <tuple>
#include <vector>

namespace pipescope {
namespace {

using Pair = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // launch, start, end

std::vector<Pair> sorted(std::vector<Pair> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<Pair> pairs_of(const PairList& list) {
  std::vector<Pair> out;
  list.for_each([&](const LaunchPair& p) { out.emplace_back(p.launch, p.start, p.end); });
  return out;
}

/// The kernel view's pairs (both views' and its own) and the job view's.
struct Views {
  std::vector<Pair> kernel, job;
};

Views views_of(const LaunchJoin& join) {
  Views v;
  const std::vector<Pair> both = pairs_of(join.both());
  v.kernel = both;
  v.job = both;
  for (const Pair& p : pairs_of(join.kernel_view_only())) v.kernel.push_back(p);
  for (const Pair& p : pairs_of(join.job_view_only())) v.job.push_back(p);
  v.kernel = sorted(v.kernel);
  v.job = sorted(v.job);
  return v;
}

// ---------------------------------------------------------------- cases

TEST(LaunchJoin, ALaunchThenItsKernelIsOnePairOfBothViews) {
  LaunchJoin j;
  j.on_launch(7, 100, 3, false);
  j.on_activity(7, 150, 160, -1);
  EXPECT_EQ(pairs_of(j.both()), (std::vector<Pair>{{100, 150, 160}}));
  EXPECT_TRUE(j.kernel_view_only().empty());
  EXPECT_TRUE(j.job_view_only().empty());
  EXPECT_EQ(j.unmatched_activities(), 0u);
  EXPECT_EQ(j.earliest_launch(), 100);
}

TEST(LaunchJoin, AKernelBeforeItsLaunchInTheFileWaitsForIt) {
  // Kineto writes runtime calls and activities in time order: a kernel may
  // come just before its own launch.
  LaunchJoin j;
  j.on_activity(7, 150, 160, -1);
  EXPECT_EQ(j.unmatched_activities(), 1u);
  j.on_launch(7, 100, 3, false);
  EXPECT_EQ(pairs_of(j.both()), (std::vector<Pair>{{100, 150, 160}}));
  EXPECT_EQ(j.unmatched_activities(), 0u);
}

TEST(LaunchJoin, AnEarlyKernelBelowALaterLaunchIsTheKernelViewsOnly) {
  // The job view holds an early activity only while its id is above every
  // launch read (ids count up: a lower one was launched already, its launch
  // gone unseen). The kernel view waits for it whatever its id.
  LaunchJoin j;
  j.on_launch(9, 90, 3, false);
  j.on_activity(8, 150, 160, -1);  // its launch (8) comes after 9's
  j.on_launch(8, 80, 3, false);
  j.on_activity(9, 170, 180, -1);
  const Views v = views_of(j);
  EXPECT_EQ(v.kernel, (std::vector<Pair>{{80, 150, 160}, {90, 170, 180}}));
  EXPECT_EQ(v.job, (std::vector<Pair>{{90, 170, 180}}));
}

TEST(LaunchJoin, AGraphLaunchTakesEveryActivityInTheKernelViewAndOneInTheJobView) {
  LaunchJoin j;
  j.on_launch(5, 100, 3, true);
  for (int k = 0; k < 3; ++k) j.on_activity(5, 200 + 10 * k, 205 + 10 * k, -1);
  const Views v = views_of(j);
  EXPECT_EQ(v.kernel, (std::vector<Pair>{{100, 200, 205}, {100, 210, 215}, {100, 220, 225}}));
  EXPECT_EQ(v.job, (std::vector<Pair>{{100, 200, 205}}));
  EXPECT_EQ(j.both().size(), 1u);  // the pair both take is kept once
}

TEST(LaunchJoin, ActivitiesWithoutALaunchAreCounted) {
  LaunchJoin j;
  j.on_activity(1, 10, 20, -1);
  j.on_activity(2, 30, 40, -1);
  j.on_launch(2, 25, 3, false);
  EXPECT_EQ(j.unmatched_activities(), 1u);
  EXPECT_EQ(j.pairs(), 1u);
}

TEST(LaunchJoin, ACommunicationKernelKeepsItsLaunchsThread) {
  LaunchJoin j;
  j.on_activity(4, 300, 400, 0);  // before its launch
  j.on_launch(4, 250, 77, false);
  j.on_launch(6, 260, 78, false);
  j.on_activity(6, 410, 420, 1);
  ASSERT_EQ(j.comm_launches().size(), 2u);
  EXPECT_EQ(j.comm_launches()[0].comm, 0u);
  EXPECT_EQ(j.comm_launches()[0].launch, 250);
  EXPECT_EQ(j.comm_launches()[0].thread, 77);
  EXPECT_EQ(j.comm_launches()[1].thread, 78);
  j.clear_pairs();
  EXPECT_EQ(j.pairs(), 0u);
  EXPECT_TRUE(j.comm_launches().empty());
}

TEST(LaunchJoin, KernelsInAnyOrderOfTheirLaunches) {
  // 20,000 launches waiting at once (a second stream's buffer written a
  // whole step late), their kernels in reverse and then shuffled order: the
  // table grows and erases in every pattern of collisions.
  LaunchJoin j;
  constexpr std::int64_t kN = 20'000;
  std::vector<Pair> expected;
  for (std::int64_t c = 0; c < kN; ++c) {
    j.on_launch(c, c * 10, 1, false);
    expected.emplace_back(c * 10, c * 100, c * 100 + 5);
  }
  std::vector<std::int64_t> order;
  for (std::int64_t c = kN - 1; c >= kN / 2; --c) order.push_back(c);
  std::vector<std::int64_t> rest;
  for (std::int64_t c = 0; c < kN / 2; ++c) rest.push_back(c);
  std::shuffle(rest.begin(), rest.end(), std::mt19937_64(11));
  order.insert(order.end(), rest.begin(), rest.end());
  for (const std::int64_t c : order) j.on_activity(c, c * 100, c * 100 + 5, -1);
  EXPECT_EQ(sorted(pairs_of(j.both())), expected);
  EXPECT_EQ(j.pairs(), static_cast<std::size_t>(kN));
  EXPECT_EQ(j.unmatched_activities(), 0u);
}

// ---------------------------------------------------------------- model

/// The rules as the readers applied them event by event before the join:
/// the kernel collector's (launches kept by id, a graph's for all of its
/// activities; activities before their launch in a multimap) and the job
/// view's (one waiting launch or one early activity per id, the early one
/// only above every launch read so far).
struct Model {
  struct Launch {
    std::int64_t ts, thread;
    bool graph;
  };
  struct Early {
    std::int64_t start, end;
    long comm;
  };
  std::map<std::int64_t, Launch> launches;
  std::multimap<std::int64_t, Early> early;
  std::map<std::int64_t, std::int64_t> job_waiting;
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> job_early;
  std::int64_t max_launch = -1;
  std::vector<Pair> kernel, job;
  std::vector<std::tuple<std::size_t, std::int64_t, std::int64_t>> comm;

  void on_launch(std::int64_t c, std::int64_t ts, std::int64_t thread, bool graph) {
    max_launch = std::max(max_launch, c);
    if (const auto e = job_early.find(c); e != job_early.end()) {
      job.emplace_back(ts, e->second.first, e->second.second);
      job_early.erase(e);
    } else {
      job_waiting[c] = ts;
    }
    const auto [first, last] = early.equal_range(c);
    const bool found = first != last;
    for (auto e = first; e != last; ++e) {
      kernel.emplace_back(ts, e->second.start, e->second.end);
      if (e->second.comm >= 0) comm.emplace_back(e->second.comm, ts, thread);
    }
    early.erase(first, last);
    if (!found || graph) launches[c] = {ts, thread, graph};
  }
  void on_activity(std::int64_t c, std::int64_t start, std::int64_t end, long comm_index) {
    if (const auto l = launches.find(c); l != launches.end()) {
      kernel.emplace_back(l->second.ts, start, end);
      if (comm_index >= 0) comm.emplace_back(comm_index, l->second.ts, l->second.thread);
      if (!l->second.graph) launches.erase(l);
    } else {
      early.insert({c, {start, end, comm_index}});
    }
    if (const auto w = job_waiting.find(c); w != job_waiting.end()) {
      job.emplace_back(w->second, start, end);
      job_waiting.erase(w);
    } else if (c > max_launch) {
      job_early[c] = {start, end};
    }
  }
};

TEST(LaunchJoin, RandomFilesJoinAsTheRulesDo) {
  // Files of launches and activities in any order: most ids one launch and
  // one activity, nearby in the file either way round; some graph launches
  // with several activities, some activities without a launch, some ids
  // launched twice, some communication kernels. Pairs compared as sets per
  // view, with the communication launches and the count left unmatched.
  std::mt19937_64 rng(20261207);
  for (int file = 0; file < 200; ++file) {
    struct Event {
      bool launch;
      std::int64_t id, a, b;
      bool graph;
      long comm;
    };
    std::vector<Event> events;
    const int ids = 1 + static_cast<int>(rng() % 400);
    long comms = 0;
    for (std::int64_t id = 0; id < ids; ++id) {
      const auto roll = rng() % 100;
      const bool graph = roll < 8;
      const int launches = roll < 4 ? 0 : roll < 7 ? 2 : 1;
      const int activities = graph ? 1 + static_cast<int>(rng() % 4) : roll < 10 ? 0 : 1;
      for (int l = 0; l < launches; ++l) {
        events.push_back(
            {true, id, id * 1000 + l, static_cast<std::int64_t>(rng() % 4), graph, -1});
      }
      for (int a = 0; a < activities; ++a) {
        const std::int64_t start = id * 1000 + 500 + static_cast<std::int64_t>(rng() % 100);
        const long comm = rng() % 10 == 0 ? comms++ : -1;
        events.push_back(
            {false, id, start, start + 1 + static_cast<std::int64_t>(rng() % 50), false, comm});
      }
    }
    // Nearby events swapped (a kernel before its launch, ids across
    // threads), and now and then one moved far (a late buffer).
    for (std::size_t i = 0; i + 1 < events.size(); ++i) {
      if (rng() % 3 == 0) std::swap(events[i], events[i + 1]);
      if (rng() % 50 == 0) std::swap(events[i], events[rng() % events.size()]);
    }
    LaunchJoin join;
    Model model;
    std::int64_t earliest = std::numeric_limits<std::int64_t>::max();
    for (const Event& e : events) {
      if (e.launch) {
        join.on_launch(e.id, e.a, e.b, e.graph);
        model.on_launch(e.id, e.a, e.b, e.graph);
        earliest = std::min(earliest, e.a);
      } else {
        join.on_activity(e.id, e.a, e.b, e.comm);
        model.on_activity(e.id, e.a, e.b, e.comm);
      }
    }
    const Views v = views_of(join);
    ASSERT_EQ(v.kernel, sorted(model.kernel)) << file;
    ASSERT_EQ(v.job, sorted(model.job)) << file;
    std::vector<std::tuple<std::size_t, std::int64_t, std::int64_t>> comm;
    for (const CommLaunch& c : join.comm_launches()) comm.emplace_back(c.comm, c.launch, c.thread);
    std::sort(comm.begin(), comm.end());
    std::sort(model.comm.begin(), model.comm.end());
    ASSERT_EQ(comm, model.comm) << file;
    ASSERT_EQ(join.unmatched_activities(), model.early.size()) << file;
    ASSERT_EQ(join.earliest_launch(), earliest) << file;
  }
}

}  // namespace
}  // namespace pipescope
