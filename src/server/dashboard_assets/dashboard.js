// The dashboard page: reads /dashboard/api/jobs and /dashboard/api/jobs/<id>
// and draws tables and Chart.js charts. Every value from the server reaches
// the document as text (textContent) or as a URL-encoded query, never as
// markup. When done, <body data-state> is "ready", or "error" with the
// message in #notice. It reloads the data every 10 s (?refresh=SECONDS; 0:
// never); <body data-loads> counts the loads done.
'use strict';

(function () {
  const API = '/dashboard/api/jobs';
  const OUTCOME_COLORS = {
    converged: '#1a7f37',
    stopped_early: '#e08a00',
    not_converged: '#c94f00',
    failed: '#b3261e',
    running: '#1f5fbf',
  };
  const OUTCOME_NAMES = {
    converged: 'converged',
    stopped_early: 'stopped early (cost bound)',
    not_converged: 'not converged (max epochs)',
    failed: 'failed (client gone)',
    running: 'running',
  };

  const byId = (id) => document.getElementById(id);

  // Seconds between loads of the data: ?refresh=SECONDS, 0 = load once.
  const REFRESH_S = (() => {
    const value = new URLSearchParams(window.location.search).get('refresh');
    const seconds = value === null ? 10 : Number(value);
    return Number.isFinite(seconds) && seconds >= 0 ? seconds : 10;
  })();
  const J_PER_KWH = 3.6e6;
  let charts = [];
  let loads = 0;

  function show(value) {
    return value === null || value === undefined ? '\u2014' : String(value);
  }

  function num(value, digits) {
    if (value === null || value === undefined) return null;
    return Number(value).toLocaleString('en-US', {maximumFractionDigits: digits});
  }

  function utc(seconds) {
    return new Date(seconds * 1000).toISOString().replace('T', ' ').slice(0, 19);
  }

  function addCell(row, value, className) {
    const cell = document.createElement('td');
    cell.textContent = show(value);
    if (className) cell.className = className;
    row.appendChild(cell);
    return cell;
  }

  function setNotice(id, message) {
    byId(id).textContent = message;
  }

  async function getJson(url) {
    const response = await fetch(url, {
      credentials: 'same-origin',
      headers: {Accept: 'application/json'},
    });
    let body = null;
    try {
      body = await response.json();
    } catch (e) {
      body = null;
    }
    if (!response.ok) {
      const message = body && body.message ? body.message : 'HTTP ' + response.status;
      const error = new Error(message);
      error.status = response.status;
      throw error;
    }
    return body;
  }

  function jobLink(jobId) {
    const link = document.createElement('a');
    link.href = '/?job=' + encodeURIComponent(jobId);
    link.textContent = jobId;
    link.className = 'job-link';
    return link;
  }

  function renderJobs(jobs, selected) {
    const body = byId('jobs').tBodies[0];
    body.replaceChildren();
    byId('no-jobs').hidden = jobs.length > 0;
    for (const job of jobs) {
      const row = body.insertRow();
      row.dataset.jobId = job.job_id;
      if (job.job_id === selected) row.className = 'selected';
      const idCell = document.createElement('td');
      idCell.appendChild(jobLink(job.job_id));
      row.appendChild(idCell);
      addCell(row, job.number_of_gpus + ' \u00d7 ' + job.gpu_model);
      addCell(row, job.batch_sizes.join(', '));
      addCell(row, job.default_batch_size, 'num');
      addCell(row, job.best_batch_size, 'num');
      addCell(row, job.exploring ? 'exploring' : 'Thompson sampling');
      addCell(row, num(job.min_cost, 4), 'num');
      const saved = addCell(row, savedText(job.saved_vs_default), 'num saved');
      if (job.saved_vs_default === null) {
        saved.title = 'no estimate yet: no run at the default batch size has reached the target';
      }
      addCell(row, utc(job.created_at_s));
    }
  }

  function addSummary(term, value) {
    const list = byId('job-summary');
    const dt = document.createElement('dt');
    dt.textContent = term;
    const dd = document.createElement('dd');
    dd.textContent = show(value);
    list.append(dt, dd);
  }

  // A job's saving against always running its default batch size, for the
  // job list: "40.2% saved", "3.1% more", or null (no estimate yet).
  function savedText(fraction) {
    if (fraction === null || fraction === undefined) return null;
    return fraction >= 0 ? num(100 * fraction, 1) + '% saved' : num(-100 * fraction, 1) + '% more';
  }

  function savingsText(c) {
    if (c.default_cost_estimate === null) {
      return 'no estimate yet: no run at the default batch size ' + c.default_batch_size +
          ' has reached the target';
    }
    let saved = '';
    if (c.saved_fraction !== null) {
      saved = c.saved_fraction >= 0 ? '; saved ' + num(100 * c.saved_fraction, 1) + '%' :
                                      '; ' + num(-100 * c.saved_fraction, 1) + '% more so far';
    }
    return num(c.total_cost, 4) + ' so far against ' + num(c.total_default_cost, 4) +
        ' for always batch size ' + c.default_batch_size + ' (estimated from ' + c.default_runs +
        ' converged default run' + (c.default_runs === 1 ? '' : 's') + ', ' +
        num(c.default_cost_min, 4) + ' to ' + num(c.default_cost_max, 4) + ')' + saved;
  }

  function energyText(trials) {
    const joules = trials.reduce((sum, t) => sum + (t.energy_j === null ? 0 : t.energy_j), 0);
    return num(joules / J_PER_KWH, 3) + ' kWh (' + num(joules, 0) + ' J, ' + trials.length +
        ' trial' + (trials.length === 1 ? '' : 's') + ')';
  }

  function renderSummary(detail) {
    const spec = detail.job;
    const belief = detail.belief;
    byId('job-summary').replaceChildren();
    addSummary('GPUs', spec.number_of_gpus + ' \u00d7 ' + spec.gpu_model);
    addSummary('Batch sizes', spec.batch_sizes.join(', ') + ' (default ' +
        spec.default_batch_size + ')');
    addSummary('Cost knob (eta)', spec.eta_knob);
    addSummary('Target metric', (spec.higher_is_better_metric ? '\u2265 ' : '\u2264 ') +
        spec.target_metric + ' within ' + spec.max_epochs + ' epochs');
    addSummary('State', belief.exploring ? 'exploring (pruning walk)' : 'Thompson sampling');
    addSummary('Best batch size so far', belief.best_batch_size);
    addSummary('Lowest cost that converged', num(belief.min_cost, 4));
    addSummary('Early-stop cost bound', num(belief.early_stop_threshold, 4));
    addSummary('Trials in flight', belief.in_flight.length);
    addSummary('Energy of its trials', energyText(detail.trials));
    addSummary('Cost against the default', savingsText(detail.cost_vs_default));
  }

  function renderArms(belief) {
    const body = byId('arms').tBodies[0];
    body.replaceChildren();
    for (const arm of belief.arms) {
      const row = body.insertRow();
      addCell(row, arm.batch_size, 'num');
      addCell(row, arm.num_observations, 'num');
      addCell(row, num(arm.mean_cost, 4), 'num');
      addCell(row, num(arm.cost_spread, 4), 'num');
    }
    byId('pruned').textContent = belief.pruned_batch_sizes.length === 0 ? '' :
        'Pruned during exploration (not arms of the bandit): ' +
        belief.pruned_batch_sizes.join(', ') + '.';
  }

  function renderTrials(trials) {
    const body = byId('trials').tBodies[0];
    body.replaceChildren();
    for (const t of trials) {
      const row = body.insertRow();
      row.className = 'trial';
      row.dataset.outcome = t.outcome;
      addCell(row, t.trial_number, 'num');
      addCell(row, t.batch_size, 'num');
      addCell(row, t.kind);
      addCell(row, OUTCOME_NAMES[t.outcome] || t.outcome, 'outcome-' + t.outcome);
      addCell(row, num(t.energy_j, 1), 'num');
      addCell(row, num(t.time_s, 1), 'num');
      addCell(row, num(t.cost, 4), 'num');
      addCell(row, t.epoch, 'num');
      addCell(row, num(t.metric, 4), 'num');
      addCell(row, t.message, 'message');
    }
  }

  const chartOptions = (yTitle, xTitle) => ({
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    plugins: {legend: {position: 'bottom'}},
    scales: {
      x: {title: {display: true, text: xTitle}},
      y: {title: {display: true, text: yTitle}},
    },
  });

  function drawCharts(detail) {
    for (const chart of charts) chart.destroy();  // Those of the previous load.
    charts = [];
    const ended = detail.trials.filter((t) => t.cost !== null);
    charts.push(new Chart(byId('trial-cost-chart'), {
      type: 'bar',
      data: {
        labels: ended.map((t) => '#' + t.trial_number + ' (' + t.batch_size + ')'),
        datasets: [{
          label: 'cost (bar colour: outcome)',
          data: ended.map((t) => t.cost),
          backgroundColor: ended.map((t) => OUTCOME_COLORS[t.outcome] || '#888'),
        }],
      },
      options: chartOptions('cost', 'trial (batch size)'),
    }));

    const arms = detail.belief.arms;
    charts.push(new Chart(byId('belief-chart'), {
      type: 'bar',
      data: {
        labels: arms.map((a) => String(a.batch_size)),
        datasets: [
          {
            type: 'bar',
            label: 'mean \u00b1 2 sd',
            data: arms.map((a) => a.mean_cost === null || a.cost_spread === null ? null :
                [a.mean_cost - 2 * a.cost_spread, a.mean_cost + 2 * a.cost_spread]),
            backgroundColor: 'rgba(31, 95, 191, 0.25)',
            borderColor: '#1f5fbf',
            borderWidth: 1,
          },
          {
            type: 'line',
            label: 'mean cost',
            data: arms.map((a) => a.mean_cost),
            showLine: false,
            pointRadius: 5,
            backgroundColor: '#1d2430',
            borderColor: '#1d2430',
          },
        ],
      },
      options: chartOptions('expected cost', 'batch size'),
    }));

    const c = detail.cost_vs_default;
    const datasets = [{
      label: 'this job',
      data: c.points.map((p) => p.cumulative_cost),
      borderColor: '#1a7f37',
      backgroundColor: '#1a7f37',
    }];
    if (c.default_cost_estimate !== null) {
      datasets.push({
        label: 'always batch size ' + c.default_batch_size + ' (estimated)',
        data: c.points.map((p) => p.cumulative_default_cost),
        borderColor: '#b3261e',
        backgroundColor: '#b3261e',
        borderDash: [6, 4],
      });
    }
    charts.push(new Chart(byId('cumulative-chart'), {
      type: 'line',
      data: {labels: c.points.map((p) => '#' + p.trial_number), datasets: datasets},
      options: chartOptions('cumulative cost', 'trial'),
    }));
    for (const chart of charts) chart.canvas.dataset.chart = 'drawn';
  }

  async function explainMissingCharts() {
    let reason = '';
    try {
      const response = await fetch('/dashboard/static/chart.js', {credentials: 'same-origin'});
      if (!response.ok) reason = ': ' + (await response.text()).trim();
    } catch (e) {
      reason = '';
    }
    setNotice('chart-notice', 'Charts are unavailable: Chart.js did not load' + reason);
  }

  function renderJob(detail) {
    byId('job-section').hidden = false;
    byId('job-title').textContent = detail.job_id;
    document.title = 'Zeus: ' + detail.job_id;
    renderSummary(detail);
    renderArms(detail.belief);
    renderTrials(detail.trials);
    byId('cost-method').textContent = 'How the cost against the default is estimated: ' +
        detail.cost_vs_default.method;
  }

  async function main() {
    const params = new URLSearchParams(window.location.search);
    let selected = params.get('job');
    try {
      // The list comes in pages of 100 jobs by id; `after` names the last
      // job of the previous page.
      const after = params.get('after');
      const list = await getJson(after === null ? API : API + '?after=' + encodeURIComponent(after));
      const jobs = list.jobs;
      if (list.next_after !== null && list.next_after !== undefined) {
        const next = new URLSearchParams();
        next.set('after', list.next_after);
        if (selected !== null) next.set('job', selected);
        byId('more-jobs-link').href = '/?' + next.toString();
        byId('more-jobs').hidden = false;
      }
      if (selected === null && jobs.length > 0) {
        selected = jobs.reduce((a, b) => (b.created_at_s > a.created_at_s ? b : a)).job_id;
      }
      renderJobs(jobs, selected);
      if (selected !== null) {
        const detail = await getJson(API + '/' + encodeURIComponent(selected));
        renderJob(detail);
        if (typeof Chart === 'undefined') {
          await explainMissingCharts();
        } else {
          drawCharts(detail);
        }
      }
      document.body.dataset.state = 'ready';
      setNotice('notice', '');
    } catch (e) {
      setNotice('notice', e.message);
      document.body.dataset.state = 'error';
      if (e.status) document.body.dataset.httpStatus = String(e.status);
    }
  }

  // Loads the data now and again every REFRESH_S seconds.
  async function load() {
    await main();
    loads += 1;
    document.body.dataset.loads = String(loads);
    byId('updated').textContent = 'Updated ' + utc(Date.now() / 1000) + ' UTC' +
        (REFRESH_S > 0 ? '; refreshes every ' + REFRESH_S + ' s (?refresh=SECONDS, 0: never)' :
                         '; not refreshing (?refresh=0)');
    if (REFRESH_S > 0) setTimeout(load, REFRESH_S * 1000);
  }

  load();
})();
