"""Scale-out: render and submit KubeRay RayJobs for a spec."""
