package report

func raceResult(alg, placement string, nodes int, rtt float64, effective int64) Result {
	return Result{Algorithm: alg, Distributed: &Distributed{
		Variant: placement, Placement: placement, Balancer: "round-robin", Nodes: nodes, StoreLatencyMS: rtt, EffectiveLimit: effective,
	}}
}
