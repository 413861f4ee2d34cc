//! A run spread over hosts, in exact words: the topology in the
//! environment and a table of the hosts after it, escaped like everything
//! else a host can say; and a run on one machine without either.

mod common;

use throng_report::{Exporter, HtmlExporter, JsonExporter, MarkdownExporter};

fn markdown(run: &throng_model::RunData) -> String {
    String::from_utf8(MarkdownExporter::default().export(run).unwrap()).unwrap()
}

fn html(run: &throng_model::RunData) -> String {
    String::from_utf8(HtmlExporter.export(run).unwrap()).unwrap()
}

#[test]
fn markdown_shows_the_topology_and_every_host() {
    let md = markdown(&common::spread_run());
    assert!(md.contains(
        "## Environment\n\n| | |\n|---|---|\n\
         | Topology | 2 client hosts → 1 server host, 0.046 ms RTT |\n\
         | Host | bench-1 |\n"
    ));
    // Right after the environment, before the machine check that names
    // each host's findings.
    assert!(md.contains(
        "| net.ipv4.tcp\\_tw\\_reuse | 2 |\n\n\
         ### Hosts\n\n\
         | Host | Role | Machine | Kernel | Open files (soft / hard) | Clock offset | Path to the server | Machine check |\n\
         |---|---|---|---|--:|--:|---|---|\n\
         | ssh://root@198.18.0.13 | server | x86\\_64, Intel(R) Xeon(R) CPU @ 2.20GHz, 4 CPUs, 24576.0 MiB | 6.1.0-18-amd64 | 1024 / 524288 | +0.012 ms ±0.040 | – | 1 warn, 1 ok |\n\
         | ssh://root@198.18.0.21 | client | x86\\_64, AMD EPYC 7B13, 8 CPUs, 32768.0 MiB | 6.1.0-18-amd64 | 1048576 / 1048576 | -0.031 ms ±0.052 | RTT 0.046 ms, MTU 1500, via eth0 at 10000 Mb/s | clean |\n\
         | ssh://load\\_2@client-2:2222 | client | x86\\_64, &lt;script&gt;alert('x')&lt;/script&gt;, 1 CPU | 6.1.0-18-cloud-amd64 | 1024 / 524288 | +0.000 ms ±0.061 | RTT 0.051 ms, MTU 9001, via ens5\\|x | 1 fail, 1 warn, 1 ok |\n\
         \n### Machine check\n"
    ));
    assert!(md.contains(
        "| limits.nofile | fail | client host ssh://load\\_2@client-2:2222: open-file limit 1024 \
         is below the 2 × 200 connections |  |\n"
    ));
    // The configs' fenced blocks hold raw markup; a host's text never does.
    assert!(!md.contains("<powersave>"));
}

#[test]
fn html_shows_the_topology_and_every_host_escaped() {
    let h = html(&common::spread_run());
    assert!(h.contains(
        "<h2 id=\"environment\">Environment</h2>\n<table>\n\
         <tr><th class=\"t\">Topology</th><td class=\"t\">2 client hosts → 1 server host, 0.046 ms RTT</td></tr>\n\
         <tr><th class=\"t\">Host</th><td class=\"t\">bench-1</td></tr>\n"
    ));
    assert!(h.contains(
        "</table></details>\n<h3>Hosts</h3>\n<div class=\"scroll\"><table>\n\
         <tr><th class=\"t\">Host</th><th class=\"t\">Role</th><th class=\"t\">Machine</th>\
         <th class=\"t\">Kernel</th><th>Open files (soft / hard)</th><th>Clock offset</th>\
         <th class=\"t\">Path to the server</th><th class=\"t\">Machine check</th></tr>\n\
         <tr><td class=\"t\">ssh://root@198.18.0.13</td><td class=\"t\">server</td>\
         <td class=\"t\">x86_64, Intel(R) Xeon(R) CPU @ 2.20GHz, 4 CPUs, 24576.0 MiB</td>\
         <td class=\"t\">6.1.0-18-amd64</td><td>1024 / 524288</td><td>+0.012 ms ±0.040</td>\
         <td class=\"t\">–</td>\
         <td class=\"t warn\" title=\"cpu.governor: CPU frequency governor is powersave\">1 warn, 1 ok</td></tr>\n\
         <tr><td class=\"t\">ssh://root@198.18.0.21</td><td class=\"t\">client</td>\
         <td class=\"t\">x86_64, AMD EPYC 7B13, 8 CPUs, 32768.0 MiB</td>\
         <td class=\"t\">6.1.0-18-amd64</td><td>1048576 / 1048576</td><td>-0.031 ms ±0.052</td>\
         <td class=\"t\">RTT 0.046 ms, MTU 1500, via eth0 at 10000 Mb/s</td>\
         <td class=\"t valid\">clean</td></tr>\n\
         <tr><td class=\"t\">ssh://load_2@client-2:2222</td><td class=\"t\">client</td>\
         <td class=\"t\">x86_64, &lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;, 1 CPU</td>\
         <td class=\"t\">6.1.0-18-cloud-amd64</td><td>1024 / 524288</td><td>+0.000 ms ±0.061</td>\
         <td class=\"t\">RTT 0.051 ms, MTU 9001, via ens5|x</td>\
         <td class=\"t fail\" title=\"limits.nofile: open-file limit 1024 is below the 2 × 200 connections; \
         cpu.governor: CPU frequency governor is &lt;powersave&gt;\">1 fail, 1 warn, 1 ok</td></tr>\n\
         </table></div>\n<h3>Machine check</h3>\n"
    ));
    assert!(!h.contains("<script>"));
    assert!(!h.contains("<powersave>"));
}

#[test]
fn json_carries_the_hosts_as_stored() {
    let j: serde_json::Value =
        serde_json::from_slice(&JsonExporter.export(&common::spread_run()).unwrap()).unwrap();
    let env = &j["run"]["run"]["environment"];
    assert_eq!(
        env["topology"],
        "2 client hosts → 1 server host, 0.046 ms RTT"
    );
    assert_eq!(env["hosts"][1]["link_mbps"], 10_000);
}

#[test]
fn a_run_on_one_machine_has_neither() {
    let run = common::rich_run();
    for out in [markdown(&run), html(&run)] {
        assert!(!out.contains("Topology"));
        assert!(!out.contains("Hosts"));
    }
}
