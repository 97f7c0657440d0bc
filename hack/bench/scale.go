package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

var scaleCounts = flag.String("scale", "", "comma-separated object counts, e.g. 5000,50000: instead of the suite, measure on a fresh apiserver for each count how creates, lists, gets, watch delivery to 200 and 1000 watchers and memory grow with it")

// The figures of the scale curve, in the order of its table.
var scaleFigures = []struct{ name, unit string }{
	{createFigure, "/s"},
	{"RSS after 5,000 creates", "MiB"},
	{"  Go heap in use: RSS after 5,000 creates", "MiB"},
	{"full list, JSON, resourceVersion=0 p50", "ms"},
	{"full list, protobuf, resourceVersion=0 p50", "ms"},
	{"paged list total (limit 500) p50", "ms"},
	{"get/s (16 clients)", "/s"},
	{"watch delivery p99 (200 watchers)", "ms"},
	{"watch delivery p99 (1000 watchers)", "ms"},
	{"watch events lost", ""},
	{"RSS under watch load", "MiB"},
	{"  Go heap in use: RSS under watch load", "MiB"},
}

// scaleCurve runs the scenarios that should grow with the object count
// (lists, memory) and those that should not (gets, watch delivery) at each
// count of -scale, each on an apiserver of its own, and prints them side
// by side with their growth from the first count.
func scaleCurve() {
	var counts []int
	for _, s := range strings.Split(*scaleCounts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		check(err)
		counts = append(counts, n)
	}
	*rounds = 5
	results := make([]map[string]float64, len(counts))
	for i, n := range counts {
		fmt.Printf("== %d objects\n", n)
		*objects = n
		dir, err := os.MkdirTemp("", "cronplane-bench-scale-")
		check(err)
		b, stop := startAPIServer(dir)
		time.Sleep(2 * time.Second)
		b.do("POST", "/api/v1/namespaces", `{"metadata":{"name":"`+namespace+`"}}`, 201)
		b.create()
		b.memory("RSS after 5,000 creates", "created")
		b.lists()
		rate := b.getRate(b.token, n, 5*time.Second)
		report(fmt.Sprintf("get one object, %d clients", *clients), fmt.Sprintf("%.0f/s", rate), "")
		record("get/s (16 clients)", "/s", rate)
		lost := 0.0
		for _, w := range []int{200, 1000} {
			*watchers = w
			b.watch()
			lost += current["watch events lost"]
		}
		current["watch events lost"] = lost
		stop()
		check(os.RemoveAll(dir))
		results[i], current = current, map[string]float64{}
	}
	fmt.Printf("\n== the scale curve (growth: the figure over the first count's)\n%-44s", "figure")
	for _, n := range counts {
		fmt.Printf(" %14s", fmt.Sprintf("%d objects", n))
	}
	fmt.Printf(" %8s\n", "growth")
	for _, f := range scaleFigures {
		fmt.Printf("%-44s", strings.Replace(f.name, "5,000 ", "", 1))
		for i := range counts {
			fmt.Printf(" %14s", fmt.Sprintf("%.1f %s", results[i][f.name], f.unit))
		}
		growth := "-"
		if first := results[0][f.name]; first != 0 {
			growth = fmt.Sprintf("%.2f", results[len(counts)-1][f.name]/first)
		}
		fmt.Printf(" %8s\n", growth)
	}
}
