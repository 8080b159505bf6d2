"""`zeus serve` on loopback speaks the original Zeus server's protocol as the
original's clients and tests send it (issue 24): raw JSON bodies with fields
the server does not know (`seed` at registration, `max_power` in a report),
which the original's request models ignore, while bad values of the fields
it knows are still refused. Standard library only: no client package."""

import json
import urllib.error
import urllib.request


def call(base, method, path, body=None):
    """(status, parsed JSON answer) of one request."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def original_registration(**changes):
    """JobSpecFromClient as the original client posts it: every JobParams
    field (window_size 0: no window), the GPU config, and an extra `seed`."""
    body = {
        "job_id": None, "job_id_prefix": "wire", "batch_sizes": [16, 32, 64],
        "default_batch_size": 32, "eta_knob": 0.5, "beta_knob": 2.0, "target_metric": 0.9,
        "higher_is_better_metric": True, "max_epochs": 5, "num_pruning_rounds": 2,
        "window_size": 0, "mab_prior_mean": 0.0, "mab_prior_precision": 0.0,
        "mab_num_explorations": 2, "mab_seed": 11, "max_power": 300.0, "number_of_gpus": 1,
        "gpu_model": "A100", "seed": 1,
    }
    body.update(changes)
    return body


def test_original_shapes_with_unknown_fields_run_a_whole_trial(zeus_server):
    status, job = call(zeus_server, "POST", "/jobs", original_registration())
    assert status == 201, job
    assert job["job_id"].startswith("wire-")
    assert job["window_size"] == 0 and "seed" not in job
    status, trial = call(zeus_server, "GET", f"/jobs/batch_size?job_id={job['job_id']}")
    assert status == 200, trial
    assert trial["batch_size"] == 32 and trial["trial_number"] == 1
    report = dict(trial, time=12.5, energy=3000.0, max_power=300, metric=0.95, current_epoch=1)
    status, answer = call(zeus_server, "POST", "/report", report)
    assert status == 200, answer
    assert answer["stop_train"] is True and answer["converged"] is True


def test_known_fields_keep_their_checks_next_to_unknown_ones(zeus_server):
    status, answer = call(zeus_server, "POST", "/jobs",
                          original_registration(job_id="wire-2", max_epochs=0))
    assert status == 422 and "max_epochs" in answer["message"], answer
    status, answer = call(zeus_server, "POST", "/jobs",
                          original_registration(job_id="wire-3", batch_sizes="16,32"))
    assert status == 422 and "batch_sizes" in answer["message"], answer
    status, job = call(zeus_server, "POST", "/jobs", original_registration(job_id="wire-4"))
    assert status == 201, job
    status, trial = call(zeus_server, "GET", "/jobs/batch_size?job_id=wire-4")
    assert status == 200, trial
    report = dict(trial, time="slow", energy=1.0, max_power=300, metric=0.1, current_epoch=1)
    status, answer = call(zeus_server, "POST", "/report", report)
    assert status == 422 and "time" in answer["message"], answer
    report.update(time=1.0, current_epoch=9999)
    status, answer = call(zeus_server, "POST", "/report", report)
    assert status == 422 and "max_epochs" in answer["message"], answer


def test_a_trial_reported_again_answers_as_the_original(zeus_server):
    """Ranks > 0 of the original's distributed flow report the same trial
    after rank 0 ended it: the original answers stop, the trial's outcome and
    "Result for this trial(N) is already reported."."""
    status, job = call(zeus_server, "POST", "/jobs", original_registration())
    assert status == 201, job
    status, trial = call(zeus_server, "GET", f"/jobs/batch_size?job_id={job['job_id']}")
    assert status == 200, trial
    report = dict(trial, time=12.5, energy=3000.0, metric=0.95, current_epoch=1)
    status, first = call(zeus_server, "POST", "/report", report)
    assert status == 200 and first["stop_train"] is True and first["converged"] is True, first
    status, again = call(zeus_server, "POST", "/report", report)
    assert status == 200, again
    assert again == {"stop_train": True, "converged": True,
                     "message": f"Result for this trial({trial['trial_number']}) is already "
                                "reported."}
