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

"""``openstack gpu candidate list`` against a real cloud, proven by Nova.

For each pool mode, the hosts ``gpu candidate list --flavor F`` lists are
exactly those where ``server create --host H`` (compute API 2.74, which
still runs Placement and every scheduler filter for H) boots F. The cloud
is shared: other tests' servers may hold GPUs, so a mismatch is checked
again once before it fails, and nothing assumes a host is idle.
"""

import collections
import csv
import io
import json
import re
import urllib.parse

from gpuclient.tests.functional import base
from gpuclient.tests.functional import faults

PCI_CLASS = 'CUSTOM_PCI_10DE_2331'
ALL_HOSTS = (base.PT_HOST, base.VGPU_HOST, base.MIG_HOST, base.BM_HOST,
             base.PLAIN_HOST)


class CandidatesTestCase(base.FunctionalTestCase):
    def create_pool(self, *args):
        name = self.unique_name('pool')
        rc, out, err = self.openstack_raw('gpu', 'pool', 'create', name,
                                          *args, '-f', 'json')
        if rc:
            self.fail('gpu pool create failed: %s' % err.strip())
        self.addCleanup(self.delete_pool, name)
        return json.loads(out)

    def gpu_flavor(self, pool, *args):
        name = self.unique_name('flavor')
        self.openstack('gpu', 'flavor', 'create', name, '--pool', pool,
                       '--vcpus', '1', '--ram', '512', '--disk', '1', *args)
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        return name

    def candidates(self, *args, cloud=None):
        """The rows of ``gpu candidate list ARGS -f json``."""
        return self.openstack('gpu', 'candidate', 'list', *args, cloud=cloud)

    def hosts(self, *args):
        """The candidate hosts of this stream (the other stream enables
        its own hosts meanwhile: base.SECOND_STREAM_HOSTS)."""
        return {row['Host'] for row in self.candidates(*args)
                if row['Host'] not in base.SECOND_STREAM_HOSTS}

    def explain(self, *args, fmt='json'):
        """(stdout, stderr) of ``gpu candidate list ARGS --explain -f
        FMT``."""
        argv = ('gpu', 'candidate', 'list', *args, '--explain', '-f', fmt)
        rc, out, err = self.openstack_raw(*argv)
        if rc:
            raise base.CommandFailed(['openstack', *argv], rc, out, err)
        return out, err

    def ruled_out(self, rows):
        """{host: [reasons]} of the rows --explain adds."""
        return {row['Host']: row['Reason'] for row in rows
                if not row['Candidate']}

    def boots_on(self, flavor, host):
        """True when Nova boots FLAVOR on HOST (the server is deleted)."""
        name = self.unique_name('server')
        self.openstack_raw(
            '--os-compute-api-version', base.COMPUTE_API, 'server', 'create',
            '--flavor', flavor, '--image', base.IMAGE, '--nic', 'none',
            '--host', host, '--wait', name)
        server = self.openstack('--os-compute-api-version', base.COMPUTE_API,
                                'server', 'show', name)
        self._delete_server(name)
        return server['status'] == 'ACTIVE'

    def boot(self, flavor, host):
        name = self.unique_name('server')
        self.addCleanup(self._delete_server, name)
        rc, _out, err = self.openstack_raw(
            '--os-compute-api-version', base.COMPUTE_API, 'server', 'create',
            '--flavor', flavor, '--image', base.IMAGE, '--nic', 'none',
            '--host', host, '--wait', name)
        server = self.openstack('--os-compute-api-version', base.COMPUTE_API,
                                'server', 'show', name)
        self.assertEqual('ACTIVE', server['status'], err)
        return server

    def assert_matches_nova(self, flavor, *args):
        """gpu candidate list == the hosts where Nova boots the flavor (each
        boot's server deleted, read back gone, before the next)."""
        listed = self.hosts('--flavor', flavor, *args)
        booted = {h for h in ALL_HOSTS if self.boots_on(flavor, h)}
        self.assertEqual(booted, listed, 'gpu candidate list vs Nova')
        return listed


class TestCandidatesPerMode(CandidatesTestCase):
    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_passthrough(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST)
        flavor = self.gpu_flavor(pool['name'])
        self.assertEqual({base.PT_HOST}, self.assert_matches_nova(flavor))

    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_vgpu(self):
        pool = self.create_pool('--mode', 'vgpu', '--vgpu-type',
                                self.unique_name('t')[-8:], '--host',
                                base.VGPU_HOST)
        flavor = self.gpu_flavor(pool['name'])
        self.assertEqual({base.VGPU_HOST}, self.assert_matches_nova(flavor))

    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_mig(self):
        pool = self.create_pool('--mode', 'mig', '--mig-profile',
                                '1g.10gb', '--host', base.MIG_HOST)
        flavor = self.gpu_flavor(pool['name'])
        self.assertEqual({base.MIG_HOST}, self.assert_matches_nova(flavor))

    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_baremetal(self):
        pool = self.create_pool('--mode', 'baremetal', '--resource-class',
                                'baremetal.gpu-h100', '--host', base.BM_HOST)
        flavor = self.gpu_flavor(pool['name'])
        found = self.assert_matches_nova(flavor)
        # the node may be taken by another test's server
        self.assertLessEqual(found, {base.BM_HOST})


class TestWhyNot(CandidatesTestCase):
    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_full_pool_names_devices_and_servers(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST)
        flavor = self.gpu_flavor(pool['name'])
        rows = self.candidates('--flavor', flavor)
        free = rows[0]['GPUs Free'] if rows else 0
        servers = [self.boot(flavor, base.PT_HOST)['id']
                   for _i in range(free)]
        rows = json.loads(self.explain('--flavor', flavor)[0])
        self.assertEqual([], [row for row in rows if row['Candidate']])
        out = self.ruled_out(rows)
        texts = out[base.PT_HOST]
        full = [t for t in texts if 'devices are allocated' in t]
        self.assertEqual(1, len(full), texts)
        self.assertIn(PCI_CLASS, full[0])
        for server in servers:
            self.assertIn(server, full[0])
        # the other hosts are out for the pool steering or the class
        self.assertIn('not in pool %s' % pool['name'],
                      ' '.join(out[base.PLAIN_HOST]))

    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_isolated_pool_keeps_ordinary_flavors_out(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST, '--isolate')
        ordinary = self.create_flavor({})['name']
        out, err = self.explain('--flavor', ordinary)
        rows = json.loads(out)
        listed = {row['Host'] for row in rows if row['Candidate']}
        self.assertNotIn(base.PT_HOST, listed)
        self.assertIn(base.PLAIN_HOST, listed)
        text = ' '.join(self.ruled_out(rows)[base.PT_HOST])
        self.assertIn("isolated pool '%s'" % pool['name'], text)
        self.assertIn(pool['isolation_trait'], text)
        # the query is on stderr
        self.assertIn('!in:', err.replace('%21', '!').replace('%3A', ':'))
        self.assertFalse(self.boots_on(ordinary, base.PT_HOST))

    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_project_limited_pool(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST, '--project', 'gpuclient-demo')
        flavor = self.gpu_flavor(pool['name'])
        self.assertEqual(
            {base.PT_HOST},
            self.hosts('--flavor', flavor, '--project', 'gpuclient-demo'))
        # the admin project
        rows = json.loads(self.explain('--flavor', flavor)[0])
        self.assertEqual([], [row for row in rows if row['Candidate']])
        self.assertIn('AggregateMultiTenancyIsolation',
                      ' '.join(self.ruled_out(rows)[base.PT_HOST]))
        # Nova agrees: the admin project cannot boot there
        self.assertFalse(self.boots_on(flavor, base.PT_HOST))

    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_disabled_service_drops_its_host(self):
        flavor = self.create_flavor({})['name']
        self.assertIn(base.PLAIN_HOST, self.hosts('--flavor', flavor))
        self.openstack('compute', 'service', 'set', '--disable',
                       base.PLAIN_HOST, 'nova-compute', parse=False)
        self.addCleanup(self.openstack, 'compute', 'service', 'set',
                        '--enable', base.PLAIN_HOST, 'nova-compute',
                        parse=False)
        rows = json.loads(self.explain('--flavor', flavor)[0])
        self.assertNotIn(base.PLAIN_HOST,
                         {row['Host'] for row in rows if row['Candidate']})
        self.assertIn('disabled',
                      ' '.join(self.ruled_out(rows)[base.PLAIN_HOST]))


class TestOutputShape(CandidatesTestCase):
    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_formats_give_the_same_rows_and_stdout_only_rows(self):
        """-f json, csv and value: the same rows, and nothing else on
        stdout; one row per nova-compute host Nova has."""
        flavor = self.create_flavor({})['name']
        services = self.openstack('compute', 'service', 'list',
                                  '--service', 'nova-compute')
        # the hosts of the second stream (the fault matrices' and lane
        # B's: another test writes pools and servers there meanwhile on the
        # test cloud) are left out of the comparison, and so is
        # recut-mig-1 (test_profile restarts its nova-compute with another
        # nova.conf); every other host is this stream's, and holds still
        moving = (base.SECOND_STREAM_HOSTS | {'recut-mig-1'}) - {
            base.VGPU_HOST, base.MIG_HOST}

        def steady(lines, host_of):
            return [line for line in lines if host_of(line) not in moving]

        out, err = self.explain('--flavor', flavor)
        data = json.loads(out)  # all of stdout is one JSON document
        columns = list(data[0])
        rows = [[item[c] for c in columns] for item in data]
        out_csv, err_csv = self.explain('--flavor', flavor, fmt='csv')
        out_value, err_value = self.explain('--flavor', flavor,
                                            fmt='value')
        as_csv = [columns] + steady(
            [['' if v is None else str(v) for v in row] for row in rows],
            lambda row: row[0])
        as_value = steady([' '.join(str(v) for v in row)
                           for row in rows], lambda line: line.split()[0])
        got_csv = steady(list(csv.reader(io.StringIO(out_csv))),
                         lambda row: row[0])
        got_value = steady(out_value.splitlines(),
                           lambda line: line.split()[0])
        self.assertEqual(as_csv, got_csv)
        self.assertEqual(as_value, got_value)
        self.assertEqual(['Host', 'Pool', 'GPU Providers', 'GPUs Total',
                          'GPUs Used', 'GPUs Free', 'Free VCPU',
                          'Free PCPU', 'Free RAM (MiB)', 'Free Disk (GiB)',
                          'NUMA', 'Candidate', 'Reason'], columns)
        # every compute host is a row: a candidate or ruled out, with why
        self.assertEqual({s['Host'] for s in services},
                         {row['Host'] for row in data})
        for row in data:
            self.assertEqual(not row['Candidate'], bool(row['Reason']), row)
        # the explanation is on stderr, in every format
        for text in (err, err_csv, err_value):
            self.assertIn('Placement query (microversion', text)
            self.assertIn('Nova settings', text)
            self.assertNotIn('Placement query', out_csv + out_value)


class TestHostFilters(CandidatesTestCase):
    """ImagePropertiesFilter and ComputeCapabilitiesFilter, judged from
    the compute API, agree with Nova: what they rule out, Nova refuses
    ("No valid host"); what they keep stays a candidate."""

    def arch(self, host):
        # the premise, read from Nova: the hosts are x86_64 machines
        return self.hypervisor(host)['cpu_info']['arch']

    def filter_reasons(self, name, *args):
        """{host: reasons naming filter NAME} and the candidate hosts."""
        rows = json.loads(self.explain(*args)[0])
        out = {host: [r for r in reasons if name in r]
               for host, reasons in self.ruled_out(rows).items()}
        return ({h: r for h, r in out.items() if r},
                {row['Host'] for row in rows if row['Candidate']})

    def assert_no_valid_host(self, flavor, image=base.IMAGE):
        server = self.boot_refused(flavor, image)
        self.assertEqual('ERROR', server['status'])
        self.assertIn('No valid host', str(server.get('fault')))

    def boot_refused(self, flavor, image):
        name = self.unique_name('server')
        self.addCleanup(self._delete_server, name)
        self.openstack_raw(
            '--os-compute-api-version', base.COMPUTE_API, 'server', 'create',
            '--flavor', flavor, '--image', image, '--nic', 'none', '--wait',
            name)
        return self.openstack('--os-compute-api-version', base.COMPUTE_API,
                              'server', 'show', name)

    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_capabilities_extra_spec(self):
        self.assertEqual('x86_64', self.arch(base.PLAIN_HOST))
        other = self.create_flavor(
            {'capabilities:cpu_info:arch': 's== aarch64'})
        same = self.create_flavor(
            {'capabilities:cpu_info:arch': '<or> aarch64 <or> x86_64'})
        # Nova holds the extra spec as written
        self.assertEqual(
            {'capabilities:cpu_info:arch': 's== aarch64'},
            self.openstack('flavor', 'show', other['id'])['properties'])
        reasons, kept = self.filter_reasons(
            'ComputeCapabilitiesFilter', '--flavor', other['name'])
        self.assertEqual(set(), kept)
        self.assertIn(base.PLAIN_HOST, reasons)
        self.assertIn('capabilities:cpu_info:arch=s== aarch64, the host has '
                      'x86_64', reasons[base.PLAIN_HOST][0])
        reasons, kept = self.filter_reasons(
            'ComputeCapabilitiesFilter', '--flavor', same['name'])
        # only a node without cpu_info (Ironic) fails it, in Nova too
        for host in reasons:
            self.assertEqual({}, self.hypervisor(host)['cpu_info'])
        self.assertNotIn(base.PLAIN_HOST, reasons)
        self.assertIn(base.PLAIN_HOST, kept)
        self.assert_no_valid_host(other['name'])

    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal', 'plain')
    def test_image_architecture(self):
        self.assertEqual('x86_64', self.arch(base.PLAIN_HOST))
        flavor = self.create_flavor({})['name']
        images = {}
        for arch in ('aarch64', 'x86_64'):
            name = self.unique_name('image-' + arch)
            self.openstack('image', 'create', '--file', '/dev/null',
                           '--disk-format', 'raw', '--container-format',
                           'bare', '--property', 'architecture=' + arch,
                           name)
            self.addCleanup(self.openstack_raw, 'image', 'delete', name)
            images[arch] = name
            # Glance holds the property Nova's filter reads
            self.assertEqual(arch, self.openstack(
                'image', 'show', name)['properties']['architecture'])
        reasons, kept = self.filter_reasons(
            'ImagePropertiesFilter', '--flavor', flavor,
            '--image', images['aarch64'])
        self.assertEqual(set(), kept)
        self.assertIn('architecture=aarch64', reasons[base.PLAIN_HOST][0])
        reasons, kept = self.filter_reasons(
            'ImagePropertiesFilter', '--flavor', flavor,
            '--image', images['x86_64'])
        self.assertEqual({}, reasons)
        self.assertIn(base.PLAIN_HOST, kept)
        self.assert_no_valid_host(flavor, images['aarch64'])


class TestMemoryEncryption(CandidatesTestCase):
    """Issue 40, rule 2: hw:mem_encryption adds MEM_ENCRYPTION_CONTEXT=1
    and the model's CPU trait (AMD SEV by default) to the request Nova
    sends (Nova 34's _translate_mem_encryption_request). No host of the
    test cloud offers them: gpu candidate list lists the pool's host for the
    flavor, none once the flavor asks for memory encryption, and
    Placement itself (plain osc-placement) has no candidate for the
    encryption slot."""

    @base.needs('passthrough')
    def test_no_host_offers_memory_encryption(self):
        pool = self.create_pool('--mode', 'passthrough', '--alias', 'h100',
                                '--pci-id', '10de:2331', '--host',
                                base.PT_HOST)
        flavor = self.gpu_flavor(pool['name'])
        self.assertEqual({base.PT_HOST}, self.hosts('--flavor', flavor))
        self.openstack('flavor', 'set', '--property',
                       'hw:mem_encryption=true', flavor, parse=False)
        self.assertEqual(set(), self.hosts('--flavor', flavor))
        out, err = self.explain('--flavor', flavor)
        self.assertIn('MEM_ENCRYPTION_CONTEXT', out + err)
        self.assertIn('HW_CPU_X86_AMD_SEV', out + err)
        self.assertEqual([], self.openstack(
            '--os-placement-api-version', '1.29', 'allocation', 'candidate',
            'list', '--resource', 'MEM_ENCRYPTION_CONTEXT=1', '--required',
            'HW_CPU_X86_AMD_SEV'))


class TestResultLimit(CandidatesTestCase):
    """Issue 40 rule 5: --explain says when Placement's answer filled the
    query's limit (hosts beyond it hidden, as from Nova) and which hosts
    gave several candidates, checked against Placement's own answer to
    the query the command printed (the client layer, in this process)."""

    @base.needs('mig')
    def test_a_full_limit_is_said(self):
        # a pool of the MIG host's 1g.10gb slices: every candidate of its
        # flavor is a slice of that one host, whatever the rest of the
        # cloud holds (the fault stream changes other hosts meanwhile, and
        # Placement keeps the first LIMIT candidates in no promised order)
        pool = self.create_pool('--mode', 'mig', '--mig-profile',
                                '1g.10gb', '--host', base.MIG_HOST)
        flavor = self.gpu_flavor(pool['name'])
        _out, err = self.explain('--flavor', flavor, '--limit', '2')
        query = re.search(r'GET /allocation_candidates\?(\S+)',
                          err).group(1)
        answer = faults.make_client().placement.candidates_query(
            urllib.parse.parse_qsl(query, keep_blank_values=True))
        roots = collections.Counter(
            answer['provider_summaries'][uuid]['root_provider_uuid']
            for candidate in answer['allocation_requests']
            for uuid in candidate['allocations'])
        # Placement's own answer: 2 candidates, both on the MIG host
        self.assertEqual(2, len(answer['allocation_requests']))
        self.assertEqual([self.root_provider(base.MIG_HOST)], list(roots))
        self.assertIn('Placement returned 2 allocation candidates, the '
                      'limit of this query (2', err)
        self.assertIn('Hosts with several of them (%s: 2) may have crowded '
                      'others out' % base.MIG_HOST, ' '.join(err.split()))
        # under the limit nothing was cut: no note
        _out, err = self.explain('--flavor', flavor, '--limit', '100')
        self.assertNotIn('the limit of this query', err)
        self.assertNotIn('crowded others out', ' '.join(err.split()))
