"""The pydantic-style models of zeus.optimizer (no pydantic): the original's
fields and defaults, the methods scripts call on them, and clear errors for
bad values (NaN, infinity, bounds, types, control characters)."""

import json
import math

import pytest

from zeus.exception import InvalidArgumentError
from zeus.optimizer.batch_size import JobSpec
from zeus.optimizer.batch_size import common
from zeus.optimizer.batch_size.common import (CreatedJob, GpuConfig, JobParams, JobSpecFromClient,
                                              ReportResponse, TrainingResult, TrialId)
from zeus.optimizer.power_limit import (Done, PowerLimitMeasurement, Profiling, Ready, Warmup)
from zeus.optimizer._model import ValidationError

# The original's defaults (v0.16), written down here.
ORIGINAL_DEFAULTS = dict(job_id=None, eta_knob=0.5, beta_knob=2.0, target_metric=0.5,
                         higher_is_better_metric=True, max_epochs=100, num_pruning_rounds=2,
                         window_size=0, mab_prior_mean=0.0, mab_prior_precision=0.0,
                         mab_num_explorations=2, mab_seed=None)


def spec(**overrides):
    fields = dict(job_id_prefix="mnist", batch_sizes=[256, 32, 64], default_batch_size=64)
    fields.update(overrides)
    return JobSpec(**fields)


def test_route_constants_are_the_originals():
    assert (common.REGISTER_JOB_URL, common.DELETE_JOB_URL, common.GET_NEXT_BATCH_SIZE_URL,
            common.REPORT_RESULT_URL, common.REPORT_END_URL) == (
                "/jobs", "/jobs", "/jobs/batch_size", "/report", "/trials")


def test_jobspec_defaults_are_the_originals_and_sizes_are_sorted():
    job = spec()
    for name, value in ORIGINAL_DEFAULTS.items():
        assert getattr(job, name) == value, name
    assert job.batch_sizes == [32, 64, 256]
    assert job.policy == "zeus"  # Our extra.
    assert isinstance(job, JobParams)


def test_copy_dict_json_and_parse_round_trip():
    job = spec()
    copied = job.copy(update={"job_id": "mnist-7", "eta_knob": 0.25})
    assert (copied.job_id, copied.eta_knob) == ("mnist-7", 0.25)
    assert (job.job_id, job.eta_knob) == (None, 0.5)  # The original is untouched.
    assert copied.model_copy(update={"max_epochs": 3}).max_epochs == 3
    as_dict = copied.dict()
    assert as_dict["job_id"] == "mnist-7" and as_dict["window_size"] == 0
    assert copied.model_dump() == as_dict
    assert JobSpec.parse_obj(as_dict) == copied
    assert JobSpec.model_validate(as_dict) == copied
    assert JobSpec.parse_raw(copied.json()) == copied
    assert JobSpec.model_validate_json(copied.model_dump_json()) == copied
    assert json.loads(copied.json(indent=2)) == as_dict
    assert dict(copied) == as_dict
    assert "job_id='mnist-7'" in repr(copied)
    assert set(JobSpec.__fields__) == set(as_dict)
    # The registration body: JobSpec and GpuConfig together.
    body = JobSpecFromClient(**job.dict(), max_power=1400.0, number_of_gpus=2, gpu_model="H100")
    assert body.dict()["max_power"] == 1400.0 and body.job_id is None


def test_unknown_keys_are_ignored_like_pydantic():
    answer = dict(spec(job_id="mnist-1").dict(), max_power=700, number_of_gpus=1,
                  gpu_model="H100", created_at="2026-11-25", some_future_field=[1, 2])
    job = CreatedJob.parse_obj(answer)
    assert job.job_id == "mnist-1" and not hasattr(job, "some_future_field")


@pytest.mark.parametrize("field,value,message", [
    ("eta_knob", math.nan, "finite"),
    ("eta_knob", math.inf, "finite"),
    ("eta_knob", 1.5, "<= 1.0"),
    ("beta_knob", 0.0, "> 0.0"),
    ("beta_knob", -math.inf, "finite"),
    ("target_metric", math.nan, "finite"),
    ("mab_prior_mean", math.inf, "finite"),
    ("mab_prior_precision", -1.0, ">= 0.0"),
    ("max_epochs", 0, "> 0"),
    ("max_epochs", 2.5, "not an int"),
    ("max_epochs", "10", "not an int"),
    ("num_pruning_rounds", -1, ">= 0"),
    ("window_size", -3, ">= 0"),
    ("higher_is_better_metric", "yes", "not a bool"),
    ("job_id_prefix", "mnist\x1b[31m", "control character"),
    ("job_id_prefix", "a\nb", "control character"),
    ("job_id_prefix", "", "must not be empty"),
    ("job_id", "other-1", "does not start with job_id_prefix"),
    ("batch_sizes", [], "must not be empty"),
    ("batch_sizes", [32, 32, 64], "more than once"),
    ("batch_sizes", [0, 64], "must be >= 1"),
    ("default_batch_size", 128, "not one of batch_sizes"),
    ("policy", "greedy", "policy 'greedy'"),
])
def test_bad_values_are_refused_naming_the_field(field, value, message):
    with pytest.raises(ValidationError, match=message) as info:
        spec(**{field: value})
    assert isinstance(info.value, ValueError) and isinstance(info.value, InvalidArgumentError)
    assert "JobSpec" in str(info.value)


def test_copy_and_json_validate_too():
    job = spec()
    with pytest.raises(ValidationError, match="eta_knob.*finite"):
        job.copy(update={"eta_knob": math.nan})
    job.eta_knob = math.nan  # Assignment is not validated (pydantic's default) ...
    with pytest.raises(ValidationError, match="finite"):
        job.json()  # ... but nothing carries it to the server.
    with pytest.raises(ValidationError, match="required"):
        JobSpec(job_id_prefix="mnist", batch_sizes=[1])
    with pytest.raises(ValidationError, match="not JSON"):
        JobSpec.parse_raw("{nope")
    with pytest.raises(ValidationError, match="expected a dict"):
        JobSpec.parse_obj([1, 2])


def test_other_models_have_the_originals_fields():
    assert GpuConfig(max_power=300, number_of_gpus=1, gpu_model="A40").max_power == 300.0
    with pytest.raises(ValidationError, match="max_power"):
        GpuConfig(max_power=0, number_of_gpus=1, gpu_model="A40")
    with pytest.raises(ValidationError, match="gpu_model"):
        GpuConfig(max_power=300, number_of_gpus=1, gpu_model="")
    trial = TrialId(job_id="j-1", batch_size=32, trial_number=3)
    result = TrainingResult(**trial.dict(), time=1.5, energy=20, metric=0.9, current_epoch=1)
    assert result.energy == 20.0 and isinstance(result.energy, float)
    with pytest.raises(ValidationError, match="metric.*finite"):
        TrainingResult(**trial.dict(), time=1.5, energy=20, metric=math.nan, current_epoch=1)
    assert ReportResponse.parse_obj({"stop_train": True, "converged": False,
                                     "message": "cost\nexceeded"}).message == "cost\nexceeded"


def test_power_limit_states_and_measurement_models():
    assert Ready(next_power_limit=300_000, steps=2).dict() == {"next_power_limit": 300_000,
                                                               "steps": 2}
    assert Warmup(current_power_limit=250_000, steps=1).steps == 1
    assert Profiling(current_power_limit=250_000, steps=40).current_power_limit == 250_000
    assert Done(optimal_power_limit=175_000).optimal_power_limit == 175_000
    m = PowerLimitMeasurement(power_limit=300, energy=12.5, time=0.5)
    assert PowerLimitMeasurement.parse_raw(m.json()) == m
    for bad in (dict(steps=0), dict(next_power_limit=-1)):
        with pytest.raises(ValidationError):
            Ready(**dict(dict(next_power_limit=1, steps=1), **bad))
    with pytest.raises(ValidationError, match="time"):
        PowerLimitMeasurement(power_limit=300, energy=1.0, time=0.0)
    # Every field > 0, as the original's PositiveInt / PositiveFloat.
    with pytest.raises(ValidationError, match="energy"):
        PowerLimitMeasurement(power_limit=300, energy=0.0, time=1.0)
    # Trusted values skip validation, as pydantic's model_construct / construct.
    raw = PowerLimitMeasurement.model_construct(power_limit=300, energy=0.0, time=1.0)
    assert (raw.power_limit, raw.energy, raw.time) == (300, 0.0, 1.0)
    assert PowerLimitMeasurement.construct(power_limit=1, energy=0.0, time=1.0).energy == 0.0
    with pytest.raises(ValidationError, match="required"):
        PowerLimitMeasurement.model_construct(power_limit=300)
