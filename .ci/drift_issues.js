// CI (.github/workflows/drift.yml, step "File the drift issues", actions/github-script): one issue per stack
// for what `python -m ops.verify --drift` found. The issue is found by its title (issueTitle): opened when the
// stack drifts and none is open, its body replaced while the drift lasts, commented and closed when the stack
// no longer drifts. A stack whose check could not be made (exit 2, or no result) leaves its issue as it is
// and fails the step, so the run shows it.
//
// Input: `dir`, the downloaded artifacts of the check job, one folder per stack holding stack.txt (its name),
// exit.txt (verify's exit status), report.json (verify's --drift --json: {stack, drifted, objects: [{kind, uid,
// state, fields: [{field, grafana, stack}], next_step}]}) and error.txt (its stderr); `stacks`, the stacks the
// run checked. GitHub REST calls: issues.listForRepo (open, paginated), issues.create, issues.update,
// issues.createComment; the job needs `issues: write` and nothing else.
const fs = require('fs');
const path = require('path');

const issueTitle = (stack) => `Drift: Grafana differs from what stack ${stack} set`;

function readResults(dir) {
  const results = {};
  if (!fs.existsSync(dir)) return results;
  for (const entry of fs.readdirSync(dir)) {
    const read = (name) => {
      const file = path.join(dir, entry, name);
      return fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
    };
    const stack = read('stack.txt').trim();
    if (!stack) continue;
    let report = null;
    try { report = JSON.parse(read('report.json')); } catch (error) { report = null; }
    results[stack] = { exit: parseInt(read('exit.txt').trim(), 10), report, error: read('error.txt').trim() };
  }
  return results;
}

// What goes into an issue body from Grafana (datasource names, field values, uids, the next step that names them) is
// text a Grafana admin controls: it must not ping anyone, link anywhere or restyle the issue. An @ gets a zero-width
// joiner after it (GitHub links @user and @org/team mentions, and notifies them, only for an @ followed by the name:
// GitHub Docs, "Basic writing and formatting syntax", Mentioning people and teams); prose escapes the punctuation
// Markdown gives a meaning with a backslash (CommonMark 0.31.2, 2.4 "Backslash escapes": any ASCII punctuation may be
// escaped); a code span holds no backtick (it would end the span: CommonMark 6.1 "Code spans") and escapes the pipe
// (GFM 0.29, 4.10 "Tables": a pipe inside a cell, even inside a code span, is written \|). Newlines become spaces
// (a line break would end the table row or the heading).
const ZWJ = '\u200d';
const unmention = (text) => text.replace(/@/g, '@' + ZWJ);
const oneLine = (text) => text.replace(/\r\n|\r|\n/g, ' ');
const prose = (value) => unmention(oneLine(String(value === undefined || value === null ? '' : value))
  .replace(/[\\`*_{}[\]()<>#+!|~&]/g, '\\$&'));
const code = (text) => '`' + unmention(oneLine(String(text)).replace(/`/g, "'").replace(/\|/g, '\\|')) + '`';
const cell = (value) => code(JSON.stringify(value === undefined ? null : value));

function issueBody(stack, report, runUrl) {
  const lines = [
    `\`python -m ops.verify --stack ${stack} --drift\` found Grafana objects that differ from what the stack set`,
    `(scheduled check, [run](${runUrl})). The Grafana steps are commands, which \`pulumi refresh\` cannot read back,`,
    'so `pulumi preview` shows nothing. README, Troubleshooting, "Drift" says how to restore them.', '',
  ];
  for (const item of report.objects.filter((o) => o.state !== 'ok')) {
    lines.push(`### ${prose(item.kind)} ${code(item.uid)}: ${prose(item.state)}`, '');
    if (item.fields.length) {
      lines.push('| field | in Grafana | set by the stack |', '|---|---|---|');
      for (const change of item.fields) lines.push(`| ${code(change.field)} | ${cell(change.grafana)} | ${cell(change.stack)} |`);
      lines.push('');
    }
    if (item.next_step) lines.push(`Next: ${prose(item.next_step)}`, '');
  }
  return lines.join('\n');
}

module.exports = async ({ github, context, core, stacks, dir }) => {
  const { owner, repo } = context.repo;
  const runUrl = `${context.serverUrl}/${owner}/${repo}/actions/runs/${context.runId}`;
  const results = readResults(dir);
  const open = (await github.paginate(github.rest.issues.listForRepo, { owner, repo, state: 'open', per_page: 100 }))
    .filter((issue) => !issue.pull_request);
  const unchecked = [];
  for (const stack of stacks) {
    const result = results[stack];
    const existing = open.find((issue) => issue.title === issueTitle(stack));
    if (!result || !result.report || ![0, 1].includes(result.exit)) {
      unchecked.push(`${stack} (${result ? result.error || `exit ${result.exit}` : 'no result'})`);
      continue;
    }
    if (result.exit === 1) {
      const body = issueBody(stack, result.report, runUrl);
      if (existing) {
        await github.rest.issues.update({ owner, repo, issue_number: existing.number, body });
        core.info(`${stack}: drift, issue #${existing.number} updated`);
      } else {
        const created = await github.rest.issues.create({ owner, repo, title: issueTitle(stack), body });
        core.info(`${stack}: drift, issue #${created.data.number} opened`);
      }
    } else if (existing) {
      await github.rest.issues.createComment({ owner, repo, issue_number: existing.number,
        body: `No drift any more ([run](${runUrl})): Grafana holds what stack ${stack} set. Closing.` });
      await github.rest.issues.update({ owner, repo, issue_number: existing.number, state: 'closed', state_reason: 'completed' });
      core.info(`${stack}: no drift, issue #${existing.number} closed`);
    } else {
      core.info(`${stack}: no drift`);
    }
  }
  if (unchecked.length) core.setFailed(`drift could not be checked for: ${unchecked.join('; ')}`);
};

module.exports.issueTitle = issueTitle;
module.exports.issueBody = issueBody;
