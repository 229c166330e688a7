#include "ingest/launch_join.h"

#include <algorithm>
#include <utility>

namespace pipescope {

namespace {

constexpr std::size_t kInitialSlots = 1024;  // a power of two

}  // namespace

LaunchJoin::LaunchJoin() : slots_(kInitialSlots) {}

LaunchJoin::Slot* LaunchJoin::find(std::int64_t key) {
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(key);; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.key == key) return &s;
    if (s.key == kEmpty) return nullptr;
  }
}

LaunchJoin::Slot& LaunchJoin::find_or_add(std::int64_t key) {
  if ((used_ + 1) * 2 > slots_.size()) grow();
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = home(key);; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.key == key) return s;
    if (s.key == kEmpty) {
      s.key = key;
      ++used_;
      return s;
    }
  }
}

void LaunchJoin::grow() {
  std::vector<Slot> old(slots_.size() * 2);
  old.swap(slots_);
  const std::size_t mask = slots_.size() - 1;
  for (const Slot& s : old) {
    if (s.key == kEmpty) continue;
    std::size_t i = home(s.key);
    while (slots_[i].key != kEmpty) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void LaunchJoin::erase(Slot& slot) {
  // Backward shift: each later slot of the probe run moves into the hole
  // when its home is not between the hole and it.
  const std::size_t mask = slots_.size() - 1;
  std::size_t hole = static_cast<std::size_t>(&slot - slots_.data());
  for (std::size_t i = (hole + 1) & mask; slots_[i].key != kEmpty; i = (i + 1) & mask) {
    const std::size_t h = home(slots_[i].key);
    if (((i - h) & mask) >= ((i - hole) & mask)) {
      slots_[hole] = slots_[i];
      hole = i;
    }
  }
  slots_[hole] = Slot{};
  --used_;
}

LaunchJoin::Rare& LaunchJoin::rare(Slot& slot) {
  if (slot.rare == kNone) {
    if (free_rare_.empty()) {
      slot.rare = static_cast<std::uint32_t>(rare_.size());
      rare_.emplace_back();
    } else {
      slot.rare = free_rare_.back();
      free_rare_.pop_back();
      rare_[slot.rare] = Rare{};
    }
  }
  return rare_[slot.rare];
}

void LaunchJoin::release(Slot& slot) {
  if (slot.rare == kNone) return;
  const Rare& r = rare_[slot.rare];
  if (r.early > 0 || r.job_early) return;
  free_rare_.push_back(slot.rare);
  slot.rare = kNone;
}

void LaunchJoin::on_launch(std::int64_t correlation, std::int64_t ts, std::int64_t thread,
                           bool graph) {
  any_launch_ = true;
  earliest_launch_ = std::min(earliest_launch_, ts);
  max_launch_correlation_ = std::max(max_launch_correlation_, correlation);
  Slot& s = find_or_add(correlation);
  s.thread = thread;  // the job view's pairs read it too
  bool found = false;
  if (s.rare != kNone) {
    Rare& r = rare_[s.rare];
    // The job view: the activity waiting takes this launch.
    bool job_pair = r.job_early;
    r.job_early = false;
    if (!job_pair) {
      s.flags |= kJobWaiting;
      s.job_ts = ts;
    }
    // The kernel view: every activity waiting takes it; one the job view
    // takes too is kept once.
    found = r.early > 0;
    auto place = [&](const Early& e) {
      const LaunchPair lp{ts, e.start, e.end, thread};
      if (job_pair && e.start == r.job_start && e.end == r.job_end) {
        pair(both_, lp);
        job_pair = false;
      } else {
        pair(kernel_only_, lp);
      }
      if (e.comm >= 0) comm_.push_back({static_cast<std::size_t>(e.comm), ts, thread});
    };
    if (found) {
      place(r.first);
      if (r.early > 1) {
        const auto kept = std::remove_if(more_.begin(), more_.end(), [&](const auto& m) {
          if (m.first != correlation) return false;
          place(m.second);
          return true;
        });
        more_.erase(kept, more_.end());
      }
      waiting_activities_ -= r.early;
      r.early = 0;
    }
    if (job_pair) pair(job_only_, {ts, r.job_start, r.job_end, thread});
    release(s);
  } else {
    s.flags |= kJobWaiting;
    s.job_ts = ts;
  }
  if (!found || graph) {
    s.flags = static_cast<std::uint8_t>((s.flags & ~kGraph) | kLaunch | (graph ? kGraph : 0));
    s.ts = ts;
    s.thread = thread;
  } else if (!(s.flags & kJobWaiting) && s.rare == kNone) {
    erase(s);  // both rules done with this id
  }
}

void LaunchJoin::on_activity(std::int64_t correlation, std::int64_t start, std::int64_t end,
                             long comm) {
  Slot* s = find(correlation);
  // The kernel view: the launch of this id, else the activity waits.
  bool kernel_pair = false;
  std::int64_t kernel_ts = 0;
  if (s != nullptr && (s->flags & kLaunch)) {
    kernel_pair = true;
    kernel_ts = s->ts;
    if (comm >= 0) comm_.push_back({static_cast<std::size_t>(comm), kernel_ts, s->thread});
    if (!(s->flags & kGraph)) s->flags &= static_cast<std::uint8_t>(~kLaunch);
  } else {
    if (s == nullptr) s = &find_or_add(correlation);
    Rare& r = rare(*s);
    if (r.early++ == 0) {
      r.first = {start, end, comm};
    } else {
      more_.push_back({correlation, Early{start, end, comm}});
    }
    ++waiting_activities_;
  }
  // The job view: the launch waiting, else the activity waits while no
  // later id has been launched.
  if (s->flags & kJobWaiting) {
    s->flags &= static_cast<std::uint8_t>(~kJobWaiting);
    if (kernel_pair && kernel_ts == s->job_ts) {
      pair(both_, {kernel_ts, start, end, s->thread});
      kernel_pair = false;
    } else {
      pair(job_only_, {s->job_ts, start, end, s->thread});
    }
  } else if (correlation > max_launch_correlation_) {
    Rare& r = rare(*s);
    r.job_early = true;
    r.job_start = start;
    r.job_end = end;
  }
  if (kernel_pair) pair(kernel_only_, {kernel_ts, start, end, s->thread});
  if (!(s->flags & (kLaunch | kJobWaiting)) && s->rare == kNone) erase(*s);
}

void LaunchJoin::clear_pairs() {
  latest_paired_ = std::numeric_limits<std::int64_t>::min();
  both_.clear();
  kernel_only_.clear();
  job_only_.clear();
  comm_.clear();
}

}  // namespace pipescope
