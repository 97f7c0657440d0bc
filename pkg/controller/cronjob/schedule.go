// Package cronjob owns the CronJob controller: for every CronJob it works
// out the most recent schedule time that has not run yet, creates the Job
// for it (named after the scheduled minute, so that a run is created at
// most once across restarts and failovers), keeps status.active,
// lastScheduleTime and lastSuccessfulTime, removes old finished Jobs, and
// requeues the CronJob for its next tick. It sees the cluster only through
// a client and listers, never etcd.
package cronjob

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
)

// maxMissedTimes is how many missed ticks are counted before the
// controller warns that the CronJob missed too many.
const maxMissedTimes = 100

// parseSchedule parses spec.schedule in the CronJob's time zone (the
// controller's own when none is set).
func parseSchedule(cj *batchv1.CronJob, local *time.Location) (cron.Schedule, *time.Location, error) {
	loc := local
	if tz := cj.Spec.TimeZone; tz != nil {
		l, err := time.LoadLocation(*tz)
		if err != nil {
			return nil, nil, fmt.Errorf("invalid timeZone: %q: %w", *tz, err)
		}
		loc = l
	}
	sched, err := cron.ParseStandard(cj.Spec.Schedule)
	if err != nil {
		return nil, nil, fmt.Errorf("unparseable schedule: %q : %w", cj.Spec.Schedule, err)
	}
	return sched, loc, nil
}

// mostRecentScheduleTime returns the latest schedule time in (earliest,
// now], or nil when none has come; missed counts the times in that range
// (exactly up to maxMissedTimes, roughly past it). earliest is the last
// schedule time, else the creation time. A time past the starting deadline
// is still returned: the caller reports it as missed.
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, sched cron.Schedule, loc *time.Location) (recent *time.Time, missed int) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if earliest.After(now) {
		return nil, 0
	}
	for t := sched.Next(earliest.In(loc)); !t.After(now); t = sched.Next(t) {
		tt := t
		recent = &tt
		missed++
		if missed == maxMissedTimes+1 {
			// Past the cap only the latest time matters: jump close to now
			// by the schedule's period, one period short of the estimate so
			// that irregular schedules still find their latest time.
			if period := sched.Next(t).Sub(t); period > 0 {
				if skip := now.Sub(t)/period - 2; skip > 0 {
					t = t.Add(skip * period)
				}
			}
		}
	}
	return recent, missed
}

// nextScheduleTime is the first schedule time after now.
func nextScheduleTime(now time.Time, sched cron.Schedule, loc *time.Location) time.Time {
	return sched.Next(now.In(loc))
}

// jobName is the name of the Job of one scheduled time: the CronJob's name
// and the time in minutes since the epoch.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}
