package batch

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/cronplane/cronplane/pkg/registry/rest"
)

// Wide columns shared by cronjobs and jobs.
var templateColumns = []metav1.TableColumnDefinition{
	{Name: "Containers", Type: "string", Priority: 1, Description: "Names of the containers of the pod template."},
	{Name: "Images", Type: "string", Priority: 1, Description: "Images of the containers of the pod template."},
	{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
}

var cronJobTable = &rest.TableSpec{
	Columns: append([]metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Schedule", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]},
		{Name: "Suspend", Type: "boolean", Description: batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]},
		{Name: "Active", Type: "integer", Description: batchv1.CronJobStatus{}.SwaggerDoc()["active"]},
		{Name: "Last Schedule", Type: "string", Description: batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]},
		rest.AgeColumn,
	}, templateColumns...),
	Cells: func(obj runtime.Object, now time.Time) []interface{} {
		cj := obj.(*batchv1.CronJob)
		last := "<none>"
		if cj.Status.LastScheduleTime != nil {
			last = rest.Age(*cj.Status.LastScheduleTime, now)
		}
		names, images := containerCells(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
		return []interface{}{cj.Name, cj.Spec.Schedule, boolCell(cj.Spec.Suspend), int64(len(cj.Status.Active)), last,
			rest.Age(cj.CreationTimestamp, now), names, images, selectorCell(cj.Spec.JobTemplate.Spec.Selector)}
	},
}

var jobTable = &rest.TableSpec{
	Columns: append([]metav1.TableColumnDefinition{
		rest.NameColumn,
		{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
		{Name: "Duration", Type: "string", Description: "Time the job took, or has been running, since it started."},
		rest.AgeColumn,
	}, templateColumns...),
	Cells: func(obj runtime.Object, now time.Time) []interface{} {
		job := obj.(*batchv1.Job)
		var completions string
		switch {
		case job.Spec.Completions != nil:
			completions = fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
		case job.Spec.Parallelism != nil && *job.Spec.Parallelism > 1:
			completions = fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, *job.Spec.Parallelism)
		default:
			completions = fmt.Sprintf("%d/1", job.Status.Succeeded)
		}
		var took string
		if start := job.Status.StartTime; start != nil {
			end := now
			if job.Status.CompletionTime != nil {
				end = job.Status.CompletionTime.Time
			}
			took = duration.HumanDuration(end.Sub(start.Time))
		}
		names, images := containerCells(job.Spec.Template.Spec.Containers)
		return []interface{}{job.Name, completions, took, rest.Age(job.CreationTimestamp, now), names, images, selectorCell(job.Spec.Selector)}
	},
}

func boolCell(b *bool) string {
	if b != nil && *b {
		return "True"
	}
	return "False"
}

func containerCells(cs []corev1.Container) (string, string) {
	names := make([]string, len(cs))
	images := make([]string, len(cs))
	for i, c := range cs {
		names[i], images[i] = c.Name, c.Image
	}
	return strings.Join(names, ","), strings.Join(images, ",")
}

func selectorCell(s *metav1.LabelSelector) string {
	if s == nil {
		return "<none>"
	}
	return metav1.FormatLabelSelector(s)
}
