# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""NUMA in ``gpu candidate list`` and ``gpu capacity list``, proven by boots.

The test cloud's passthrough host reports a NUMA topology of 2 cells (32
CPUs, 256 GiB of 4k pages and 2 GPUs each; ``cpu_info`` says 2 cells); the
other hosts report none (``cpu_info`` says 1 cell). For flavors asking
``hw:numa_nodes`` 1 and 2, a cell too small (300 GiB), ``hw:mem_page_size
=large`` and ``hw:pci_numa_affinity_policy`` required and preferred (3
GPUs on one cell), every host either is marked "not judged" on its row or
is listed exactly when ``server create --host`` boots there; with the host
facts that complete what the API shows, every row is judged and the hosts
listed are the hosts Nova boots on. The cloud's Prometheus holds
node_exporter's NUMA nodes of the passthrough host (2 of 256 GiB, no huge
pages) and of ``plain-1`` (1 node), and the facts gpuclient-host-facts
collects on the passthrough host's fake tree (its GPUs at the fake
driver's addresses, 2 on each NUMA node): with it alone, the passthrough
host is judged for every case, those with GPUs by the cells the
collector read. The matrix asks gpuclient's client layer in this process
and boots every case at once.
"""

import json
import os

import openstack

from gpuclient.tests.functional import base
from gpuclient.tests.functional import faults
from gpuclient.tests.functional import test_candidates

GIB = 1024
NO_TOPOLOGY = (base.VGPU_HOST, base.MIG_HOST, base.PLAIN_HOST)
# the facts of a verdict, as gpuclient-host-facts collected them
COLLECTED = 'host facts (gpuclient-host-facts)'
# what the API does not show: the passthrough host's pages and the cells
# of its GPUs, the other hosts' lack of a topology
FACTS = (['%s:numa_pages=4k' % base.PT_HOST,
          '%s:numa_gpus=2,2' % base.PT_HOST]
         + ['%s:numa_cells=0' % host for host in NO_TOPOLOGY])


class TestNuma(test_candidates.CandidatesTestCase):

    def setUp(self):
        super().setUp()
        self.need_host('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
        self.conn = openstack.connect(cloud=self.cloud)
        self.image = self.conn.image.find_image(base.IMAGE).id
        self.project = self.boot_project()
        self.project_conn = None

    def boot_project(self):
        """A project of its own for the boots (deleted at cleanup), with
        the unified limits they need (the registered defaults allow 10
        servers and 50 GiB of RAM)."""
        identity = self.conn.identity
        project = identity.create_project(
            name=self.unique_name('numa'), domain_id='default')
        self.addCleanup(identity.delete_project, project.id,
                        ignore_missing=True)
        identity.assign_project_role_to_user(
            project, identity.get_user(self.conn.current_user_id),
            identity.find_role('admin'))
        service = identity.find_service('nova').id
        region = self.conn.config.get_region_name()
        for resource, value in (('servers', 100), ('class:VCPU', 400),
                                ('class:MEMORY_MB', 4096 * GIB)):
            limit = identity.create_limit(
                service_id=service, region_id=region, project_id=project.id,
                resource_name=resource, resource_limit=value)
            self.addCleanup(identity.delete_limit, limit.id,
                            ignore_missing=True)
        return project

    def create_server(self, flavor, host):
        """A server of FLAVOR on HOST in the test's project (compute API
        2.74: --host runs Placement and every filter); its id."""
        if self.project_conn is None:
            self.project_conn = openstack.connect(
                cloud=self.cloud, project_name=self.project.name)
        conn = self.project_conn
        answer = conn.compute.post(
            '/servers', microversion=base.COMPUTE_API, json={
                'server': {'name': self.unique_name('numa'),
                           'flavorRef': flavor, 'imageRef': self.image,
                           'host': host, 'networks': 'none'}})
        self.assertEqual(202, answer.status_code, answer.text)
        server_id = answer.json()['server']['id']
        self.addCleanup(self.delete, [server_id])
        return server_id

    def delete(self, server_ids):
        """Delete the servers and wait until Nova's list of their host and
        Placement no longer hold them (the pool's cleanup refuses to strand
        them; the SDK's wait_for_delete ends at status DELETED, while Nova
        still lists the server and holds its allocations)."""
        hosts = {}
        for server_id in server_ids:
            server = self.conn.compute.find_server(server_id)
            if server is not None:
                hosts[server_id] = server.compute_host
                self.conn.compute.delete_server(server_id,
                                                ignore_missing=True)
        for server_id, host in hosts.items():
            self.assert_server_gone(server_id, host)

    def wait(self, server_ids, timeout=240):
        """{server id: True when ACTIVE, False when ERROR}."""
        def read():
            return {server_id: self.conn.compute.get_server(
                server_id).status for server_id in server_ids}

        found = self.wait_for(
            'boots of %s' % ', '.join(server_ids), read,
            lambda found: set(found.values()) <= {'ACTIVE', 'ERROR'},
            timeout=timeout, interval=1)
        self.assertEqual(set(), set(found.values()) - {'ACTIVE', 'ERROR'},
                         'boots still building: %s' % found)
        return {server_id: status == 'ACTIVE'
                for server_id, status in found.items()}

    def isolating_pools(self, host, ours):
        """The names of Nova's aggregates other than OURS that hold HOST
        and keep it to some projects (filter_tenant_id*)."""
        return sorted(
            agg.name for agg in self.conn.compute.aggregates()
            if agg.name != ours and host in (agg.hosts or ())
            and any(key.startswith('filter_tenant_id')
                    for key in agg.metadata or {}))

    def numa_pool(self):
        return self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST)['name']

    def boot_all(self, cases, hosts):
        """{(case, host): True when Nova boots the flavor there}; every
        server created at once, waited for together and deleted."""
        servers = {(case, host): self.create_server(flavor, host)
                   for case, flavor in cases.items() for host in hosts}
        status = self.wait(list(servers.values()))
        self.delete(list(servers.values()))
        return {key: status[server_id] for key, server_id in servers.items()}

    def test_candidates_name_the_hosts_nova_boots_on(self):
        from gpuclient.ops import candidate_ops
        from gpuclient.rules import maintenance
        from gpuclient.rules.scheduler import host_manager

        self.numa_pool()
        specs = {
            'numa1': (1, 512, {'hw:numa_nodes': '1'}),
            'numa2': (2, 1024, {'hw:numa_nodes': '2'}),
            'cell-too-small': (1, 300 * GIB, {'hw:numa_nodes': '1'}),
            'large-pages': (1, 512, {'hw:mem_page_size': 'large'}),
            'gpus-required': (1, 512, {
                'hw:numa_nodes': '1', 'pci_passthrough:alias': 'h100:3',
                'hw:pci_numa_affinity_policy': 'required'}),
            'gpus-preferred': (1, 512, {
                'hw:numa_nodes': '1', 'pci_passthrough:alias': 'h100:3',
                'hw:pci_numa_affinity_policy': 'preferred'}),
        }
        cases = {case: self.create_flavor(props, vcpus=vcpus, ram=ram,
                                          disk=0)['id']
                 for case, (vcpus, ram, props) in specs.items()}
        client = faults.make_client()  # no prometheus_endpoint
        facts = maintenance.parse_facts(FACTS,
                                        keys=host_manager.NUMA_FACT_KEYS)
        prometheus = openstack.config.OpenStackConfig().get_one(
            cloud=base.ADMIN_CLOUD).config['prometheus_endpoint']
        listed = {}
        for case, flavor in cases.items():
            for source, given, url in (('cpu_info', {}, None),
                                       ('prometheus', {}, prometheus),
                                       ('facts', facts, None)):
                rows = candidate_ops.collect(
                    client, flavor=flavor, project=self.project.id,
                    facts=given, prometheus=url)['hosts']
                listed[(case, source)] = {
                    row['host']: row['numa'] for row in rows}
        booted = self.boot_all(cases, test_candidates.ALL_HOSTS)
        for (case, source), rows in sorted(listed.items()):
            for host in test_candidates.ALL_HOSTS:
                numa = rows.get(host)
                marked = bool(numa and numa.startswith('not judged'))
                self.assertTrue(
                    marked or (host in rows) == booted[(case, host)],
                    '%s on %s (from %s): listed %s (%s), Nova boots: %s'
                    % (case, host, source, host in rows, numa,
                       booted[(case, host)]))
                # Prometheus: node_exporter's NUMA nodes, and the cell of
                # each GPU gpuclient-host-facts collected
                if source == 'facts' or (
                        source == 'prometheus' and host == base.PT_HOST):
                    self.assertFalse(marked, (case, host, source, numa))
        # node_exporter's NUMA nodes alone judge the passthrough host
        self.assertEqual('judged (prometheus)',
                         listed[('numa1', 'prometheus')][base.PT_HOST])
        self.assertTrue(
            listed[('numa1', 'cpu_info')][base.PT_HOST].startswith(
                'not judged'))
        # what the boots showed: the cases tell hosts apart
        self.assertEqual(
            {'numa1': True, 'numa2': True, 'cell-too-small': False,
             'large-pages': False, 'gpus-required': False,
             'gpus-preferred': True},
            {case: booted[(case, base.PT_HOST)] for case in cases})
        self.assertFalse(any(booted[(case, host)] for case in cases
                             for host in NO_TOPOLOGY))

    def test_capacity_predicts_the_boots(self):
        """CLI: gpu capacity list counts 2 of a 160 GiB one-cell flavor
        on the passthrough host (Placement alone: 3), from the cloud's
        Prometheus (node_exporter's NUMA nodes, and the cells of the GPUs
        gpuclient-host-facts collected) or from the facts; the third boot
        is refused. Without either it gives no number."""
        pool = self.numa_pool()
        name = self.unique_name('flavor')
        self.openstack('gpu', 'flavor', 'create', name, '--pool', pool,
                       '--vcpus', '1', '--ram', str(160 * GIB), '--disk',
                       '0', '--numa-policy', 'preferred')
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        self.openstack('flavor', 'set', '--property', 'hw:numa_nodes=1',
                       name, parse=False)
        args = ['gpu', 'capacity', 'list', '--flavor', name, '--per-host',
                '--project', self.project.id]
        # a Prometheus that does not answer: cpu_info alone
        rows = self.openstack(*args, '--prometheus', 'http://127.0.0.1:9')
        self.assertEqual([None], [row['Fits'] for row in rows])
        self.assertIn('numa_pages', rows[0]['NUMA'])
        facts = []
        for fact in FACTS:
            facts += ['--host-fact', fact]
        # the host is out for another reason than NUMA while another
        # test's pool isolates it for other projects (the cloud is
        # shared): wait, bounded, until Nova's aggregates hold no such
        # pool of PT_HOST, then ask once
        self.wait_for('no other isolating pool on %s' % base.PT_HOST,
                      lambda: self.isolating_pools(base.PT_HOST, pool),
                      lambda found: not found, timeout=60, interval=1)
        # the operator's facts (the same cells) win over the collector's
        for given, source in (([], 'prometheus and ' + COLLECTED),
                              (facts, 'prometheus and host facts')):
            rows = self.openstack(*args, *given)
            self.assertEqual([(base.PT_HOST, 2, 'judged (%s)' % source)],
                             [(row['Host'], row['Fits'], row['NUMA'])
                              for row in rows], rows)
        flavor = self.conn.compute.find_flavor(name).id
        # one after another, as capacity list counts them (created at
        # once, the compute's claim refused the second: "Requested instance
        # NUMA topology together with requested PCI devices cannot fit")
        for _n in range(2):
            self.assertEqual([True], list(self.wait(
                [self.create_server(flavor, base.PT_HOST)]).values()))
        self.assertEqual([False], list(self.wait(
            [self.create_server(flavor, base.PT_HOST)]).values()))


class TestHostFactNames(base.FunctionalTestCase):
    """Issue 51 defect 10: ``--host-fact`` names a host as ``--host`` does
    (the hypervisor hostname Nova shows, an FQDN on the test cloud); a name
    of no host is refused, naming the hosts, never silently dropped."""

    def numa_rows(self, flavor, *facts):
        args = ['gpu', 'candidate', 'list', '--flavor', flavor,
                # no Prometheus: what cpu_info and the facts show
                '--prometheus', 'http://127.0.0.1:9']
        for fact in facts:
            args += ['--host-fact', fact]
        rc, out, err = self.openstack_raw(*args, '-f', 'json')
        # this stream's hosts (base.SECOND_STREAM_HOSTS)
        return rc, ({row['Host']: row['NUMA'] for row in json.loads(out)
                     if row['Host'] not in base.SECOND_STREAM_HOSTS}
                    if rc == 0 else None), err

    def test_a_fact_for_the_hypervisor_hostname_is_used(self):
        self.need_host('passthrough')
        # the name Nova gives the host's compute node
        name = self.hypervisor(base.PT_HOST)['hypervisor_hostname']
        if name == base.PT_HOST:
            self.skipTest('the hypervisor hostname of %s is its own name'
                          % base.PT_HOST)
        flavor = self.create_flavor({'hw:numa_nodes': '1'}, disk=0)['id']
        rc, rows, err = self.numa_rows(flavor)
        self.assertEqual(0, rc, err)
        self.assertIn('page sizes are not known', rows[base.PT_HOST])
        rc, rows, err = self.numa_rows(flavor, '%s:numa_pages=4k' % name)
        self.assertEqual(0, rc, err)
        self.assertEqual('judged (cpu_info and host facts)',
                         rows[base.PT_HOST])
        self.assertIn('"%s" is the hypervisor hostname of compute host %s'
                      % (name, base.PT_HOST), err)
        # a mistyped name: refused, naming it and the hosts
        rc, rows, err = self.numa_rows(flavor, '%sx:numa_pages=4k' % name)
        self.assertEqual(1, rc)
        self.assertIn('--host-fact %sx:...: Unknown compute host(s): %sx.'
                      % (name, name), err)
        self.assertIn('%s (hypervisor %s)' % (base.PT_HOST, name), err)


class TestAliasPolicy(base.FunctionalTestCase):
    """Issue 51 defect 15: a flavor with hw:numa_nodes=2 and the PCI alias
    h100, no hw:pci_numa_affinity_policy. Which cell holds each GPU is not
    given, so the fit depends on the devices' policy: with the nova.conf
    the test cloud runs (its alias says "numa_policy": "preferred"), the
    row is judged, and Nova boots the flavor there."""

    def test_the_alias_policy_of_the_nova_conf_is_used(self):
        from gpuclient.tests.functional import test_config
        self.need_host('passthrough')
        etc = test_config.testcloud_etc()
        if etc is None:
            self.skipTest('not the local test cloud: its nova.conf cannot '
                          'be read')
        conf = os.path.join(etc, 'nova.conf')
        flavor = self.create_flavor({
            'hw:numa_nodes': '2', 'pci_passthrough:alias': 'h100:1'},
            vcpus=2, ram=1024, disk=0)['id']
        args = ['gpu', 'candidate', 'list', '--flavor', flavor,
                '--prometheus', 'http://127.0.0.1:9',
                '--host-fact', '%s:numa_pages=4k' % base.PT_HOST, '-f',
                'json']

        def rows(*more):
            rc, out, err = self.openstack_raw(*args, *more)
            self.assertEqual(0, rc, err)
            # this stream's hosts: lane B's passthrough host is a
            # candidate too while a test of the other stream enables it
            return {row['Host']: row['NUMA'] for row in json.loads(out)
                    if row['Host'] not in base.SECOND_STREAM_HOSTS}

        # the alias as a class only: its policy is not known
        found = rows('--alias-map', 'h100=10de:2331')
        self.assertIn('depends on the [pci] alias numa_policy',
                      found[base.PT_HOST])
        found = rows('--nova-conf', conf)
        self.assertEqual({base.PT_HOST: 'judged (cpu_info and host facts)'},
                         found)
        # Nova agrees: it boots the flavor there
        server = self.boot(flavor)
        self.assertEqual(base.PT_HOST, server['OS-EXT-SRV-ATTR:host'])


class TestLegacyAndSocketPolicies(test_candidates.CandidatesTestCase):
    """hw:pci_numa_affinity_policy legacy and socket (issue 52 item 7):
    ``gpu candidate list`` judges one-cell flavors with PCI devices on the
    passthrough host (2 NUMA cells, 2 GPUs on each, every GPU with its
    NUMA node: tools/cloud/fakevirt.py), and Nova boots each there
    (``--host``: Placement and every filter) exactly when it is listed.

    legacy: Nova lets a device without a NUMA node through
    (nova/pci/stats.py ``_filter_pools_for_numa_cells``); the test cloud's
    GPUs all have one, so legacy is as strict as required there: 3 GPUs
    fit no cell, 2 do.

    socket: Nova asks Placement for COMPUTE_SOCKET_PCI_NUMA_AFFINITY on the
    compute (nova/scheduler/utils.py), a trait only a driver that supports
    the policy reports (libvirt). The test cloud's fake drivers do not, so
    no host is a candidate and Nova boots nowhere: that is what this
    cloud can show. The policy's own rule, the devices on the cells of
    the guest's sockets (``_filter_pools_for_socket_affinity``), needs a
    host that reports the trait and has more NUMA cells than sockets; the
    test cloud's passthrough hosts have one cell per socket (socket =
    cell in fakevirt), where socket and required are one rule.
    """

    TRAIT = 'COMPUTE_SOCKET_PCI_NUMA_AFFINITY'

    def flavor(self, gpus, policy):
        return self.create_flavor({
            'hw:numa_nodes': '1', 'pci_passthrough:alias': 'h100:%d' % gpus,
            'hw:pci_numa_affinity_policy': policy}, disk=0)['id']

    def boot_at_once(self, flavors, host, timeout=240):
        """{flavor: the server as Nova shows it}: one server of each of
        FLAVORS on HOST, created together and waited for together (ACTIVE
        or ERROR), deleted at cleanup."""
        ids = {}
        for flavor in flavors:
            name = self.unique_name('server')
            self.addCleanup(self._delete_server, name)
            ids[flavor] = self.openstack(
                '--os-compute-api-version', base.COMPUTE_API, 'server',
                'create', '--flavor', flavor, '--image', base.IMAGE, '--nic',
                'none', '--host', host, name)['id']
        conn = base._connection(self.cloud)
        # bounded, on Nova: every server out of BUILD (its one assertion
        # is the caller's, on the statuses returned below)
        self.wait_for('servers out of BUILD', lambda: [
            base._server_status(conn, i) for i in ids.values()],
            lambda statuses: 'BUILD' not in statuses, timeout=timeout)
        return {flavor: self.openstack(
            '--os-compute-api-version', base.COMPUTE_API, 'server', 'show',
            server_id) for flavor, server_id in ids.items()}

    def test_legacy_and_socket_as_nova_boots(self):
        self.need_host('passthrough')
        host = base.PT_HOST
        # the alias as a class, and what the API does not show: the host's
        # page sizes and the cells of its GPUs (no Prometheus)
        args = ('--alias-map', 'h100=10de:2331', '--prometheus',
                'http://127.0.0.1:9', '--host-fact',
                '%s:numa_pages=4k' % host, '--host-fact',
                '%s:numa_gpus=2,2' % host)
        legacy3, legacy2 = self.flavor(3, 'legacy'), self.flavor(2, 'legacy')
        socket = self.flavor(1, 'socket')
        listed = {flavor: {row['Host']: row['NUMA'] for row in
                           self.candidates('--flavor', flavor, *args)}
                  for flavor in (legacy3, legacy2, socket)}
        # legacy, 2 GPUs: listed, judged (or, with other servers there,
        # not judged for their use of the cells)
        self.assertIn(listed[legacy2].get(host), (
            'judged (cpu_info and host facts)',
            'not judged: how its servers use each NUMA cell is not shown'),
            listed[legacy2])
        # legacy, 3 GPUs: out, for NUMATopologyFilter, naming the policy
        self.assertNotIn(host, listed[legacy3])
        rows = json.loads(self.explain('--flavor', legacy3, *args)[0])
        self.assertEqual(['the NUMA cells holding the guest have 2 of the 3 '
                          'PCI devices it asks (policy legacy) '
                          '(NUMATopologyFilter, from cpu_info and host '
                          'facts).'], self.ruled_out(rows).get(host))
        # socket: no host at all, for the trait Placement has on none;
        # the host's root provider lacks it (plain osc-placement)
        self.assertEqual({}, listed[socket])
        out, err = self.explain('--flavor', socket, *args)
        self.assertIn(self.TRAIT, out + err)
        self.assertNotIn(self.TRAIT, self.traits(self.root_provider(host)))
        # Nova: ACTIVE on the host exactly where gpuclient lists it
        booted = self.boot_at_once((legacy3, legacy2, socket), host)
        self.assertEqual(
            {legacy3: 'ERROR', legacy2: 'ACTIVE', socket: 'ERROR'},
            {flavor: server['status'] for flavor, server in booted.items()},
            booted)
        self.assertEqual(host, booted[legacy2]['OS-EXT-SRV-ATTR:host'])
        for flavor in (legacy3, socket):
            self.assertIn('No valid host', str(booted[flavor]['fault']))


class TestCollectedCells(test_candidates.CandidatesTestCase):
    """Issue 54 item 4: which NUMA cell holds each GPU, as
    gpuclient-host-facts collects it on the passthrough host (its fake
    tree: the fake driver's 4 GPUs, 2 on each cell) and the cloud's
    Prometheus holds it. Without it (a Prometheus that does not answer;
    the page sizes given), a one-cell flavor asking GPUs under the
    required policy is "not judged" on the host, for want of the cells of
    its GPUs; with it, the row is judged, and Nova agrees: 2 GPUs on one
    cell boot there, 3 do not."""

    ALIAS = ('--alias-map', 'h100=10de:2331')

    def flavor(self, gpus):
        return self.create_flavor({
            'hw:numa_nodes': '1', 'pci_passthrough:alias': 'h100:%d' % gpus,
            'hw:pci_numa_affinity_policy': 'required'}, disk=0)['id']

    def numa(self, flavor, *args):
        """{host: NUMA} of the candidates of FLAVOR."""
        return {row['Host']: row['NUMA'] for row in self.candidates(
            '--flavor', flavor, *self.ALIAS, *args)}

    def test_judged_from_the_collected_cells_as_nova_boots(self):
        self.need_host('passthrough')
        host = base.PT_HOST
        two, three = self.flavor(2), self.flavor(3)
        without = ('--prometheus', 'http://127.0.0.1:9', '--host-fact',
                   '%s:numa_pages=4k' % host)
        for flavor in (two, three):
            found = self.numa(flavor, *without).get(host) or ''
            self.assertTrue(found.startswith(
                'not judged: which cell holds its PCI devices is not '
                'known'), found)
        # the cloud's Prometheus (its clouds.yaml entry): judged, or not
        # judged only for other servers' use of the cells (a shared cloud)
        self.assertIn(self.numa(two).get(host), (
            'judged (prometheus and %s)' % COLLECTED,
            'not judged: how its servers use each NUMA cell is not shown'))
        self.assertNotIn(host, self.numa(three))
        rows = json.loads(self.explain('--flavor', three, *self.ALIAS)[0])
        self.assertEqual(
            ['the NUMA cells holding the guest have 2 of the 3 PCI devices '
             'it asks (policy required) (NUMATopologyFilter, from '
             'prometheus and %s).' % COLLECTED],
            self.ruled_out(rows).get(host))
        # Nova: the 2 GPUs on one cell boot there, the 3 do not
        self.assertEqual((True, False), (self.boots_on(two, host),
                                         self.boots_on(three, host)))
