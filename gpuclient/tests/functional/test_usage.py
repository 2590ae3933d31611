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

"""gpu server list and gpu usage list, proven by boots in two projects: a
passthrough server with 2 GPUs, a vGPU, a MIG and a bare-metal (Ironic)
server as admin, a vGPU server as a member; the admin's vGPU server is
deleted partway.

GPU-hours are checked against each server's own launch time (Nova's
``OS-SRV-USG:launched_at``, to the second) and the period's end, or the
times around its delete, to the second: no sleep makes the figures long
enough for a relative tolerance. The seats are checked against the
overlap, the devices against Placement's allocations.
"""

import datetime
import uuid

from gpuclient.tests.functional import base

# Nova keeps launch and termination times to the second, and gpu usage
# list shows GPU-hours to 4 digits (0.36 s): a server's figure is within
# this many seconds of the hours read off its own times
SLACK_SECONDS = 1.5


def _utc(text):
    value = datetime.datetime.fromisoformat(text.replace('Z', '+00:00'))
    if value.tzinfo is None:
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value


def _iso(when):
    return when.strftime('%Y-%m-%dT%H:%M:%S.%fZ')


class UsageTestCase(base.FunctionalTestCase):
    def make_pool(self, mode, host, *extra):
        name = self.unique_name(mode)
        self.addCleanup(self.delete_pool, name)
        self.openstack('gpu', 'pool', 'create', name, '--mode', mode,
                       *extra, '--host', host, parse=False)
        return name

    def boot_as(self, cloud, flavor):
        name = self.unique_name('server')
        rc, out, err = self.openstack_raw(
            '--os-compute-api-version', base.COMPUTE_API, 'server',
            'create', '--flavor', flavor, '--image', base.IMAGE, '--nic',
            'none', '--wait', name, '-f', 'json', cloud=cloud)
        server = self.openstack('--os-compute-api-version', '2.47',
                                'server', 'show', name, cloud=cloud)
        # the admin deletes by ID: it finds servers of every project
        self.addCleanup(self.openstack_raw, 'server', 'delete', '--wait',
                        server['id'])
        self.assertEqual('ACTIVE', server['status'], (out, err))
        return server

    def gpu_allocations(self, server_id, gpu_class):
        """{provider uuid: amount} of GPU_CLASS held by the server."""
        found = {}
        for row in self.openstack('resource', 'provider', 'allocation',
                                  'show', server_id):
            amount = row['resources'].get(gpu_class)
            if amount:
                found[row['resource_provider']] = amount
        return found

    def assert_hours(self, expected, found, gpus=1, latest=None):
        """FOUND is EXPECTED hours (or between EXPECTED and LATEST), to
        SLACK_SECONDS of each of GPUS."""
        slack = gpus * SLACK_SECONDS / 3600.0
        latest = expected if latest is None else latest
        self.assertTrue(expected - slack <= found <= latest + slack,
                        'GPU-hours %s, expected %s to %s (slack %.5f)' % (
                            found, expected, latest, slack))

    @base.needs('passthrough', 'vgpu', 'mig', 'baremetal')
    def test_servers_and_usage_in_two_projects(self):
        tag = uuid.uuid4().hex[:6]
        pt_pool = self.make_pool('passthrough', base.PT_HOST, '--alias',
                                 'h100', '--pci-id', '10de:2331')
        vgpu_pool = self.make_pool('vgpu', base.VGPU_HOST, '--vgpu-type',
                                   'ft-%s' % tag)
        mig_pool = self.make_pool('mig', base.MIG_HOST, '--mig-profile',
                                  '3g.40gb')
        bm_pool = self.make_pool('baremetal', base.BM_HOST,
                                 '--resource-class', 'baremetal.gpu-h100')
        pt_flavor = self.make_flavor(pt_pool, gpus=2)
        vgpu_flavor = self.make_flavor(vgpu_pool)
        admin_project = self.openstack('token', 'issue')['project_id']
        member_project = self.openstack('token', 'issue',
                                        cloud=self.member_cloud)[
                                            'project_id']
        start = datetime.datetime.now(datetime.timezone.utc)
        pt = self.boot_as(self.cloud, pt_flavor)
        gone = self.boot_as(self.cloud, vgpu_flavor)
        kept = self.boot_as(self.member_cloud, vgpu_flavor)
        mig = self.boot_as(self.cloud, self.make_flavor(mig_pool))
        node = self.boot_as(self.cloud, self.make_flavor(bm_pool))

        # gpu server list: every mode's devices are Placement's; as
        # openstack server list, the admin's own project by default and
        # every project with --all-projects
        own = {r['ID'] for r in self.openstack('gpu', 'server', 'list')}
        self.assertEqual(set(), {pt['id'], gone['id'], mig['id'],
                                 node['id']} - own)
        self.assertNotIn(kept['id'], own)
        rows = {r['ID']: r for r in self.openstack(
            'gpu', 'server', 'list', '--long', '--all-projects')}
        for server, gpu_class, mode, pool, gpus in (
                (pt, 'CUSTOM_PCI_10DE_2331', 'passthrough', pt_pool, 2),
                (gone, 'VGPU', 'vgpu', vgpu_pool, 1),
                (kept, 'VGPU', 'vgpu', vgpu_pool, 1),
                (mig, 'VGPU', 'mig', mig_pool, 1),
                (node, 'CUSTOM_BAREMETAL_GPU_H100', 'baremetal', bm_pool,
                 1)):
            row = rows[server['id']]
            held = self.gpu_allocations(server['id'], gpu_class)
            self.assertEqual(sorted(held), row['Device Providers'])
            self.assertEqual(sum(held.values()), row['GPUs'])
            self.assertEqual(gpus, row['GPUs'])
            self.assertEqual(len(held), len(row['Devices']))
            self.assertEqual((mode, pool, gpu_class, server['project_id']),
                             (row['Mode'], row['Pool'],
                              row['Resource Class'], row['Project']))
        self.assertEqual([pt['id']], [r['ID'] for r in self.openstack(
            'gpu', 'server', 'list', '--pool', pt_pool)])
        # a member sees their own server only, and may not ask for others
        mine = self.openstack('gpu', 'server', 'list',
                              cloud=self.member_cloud)
        self.assertEqual(member_project, kept['project_id'])
        self.assertIn(kept['id'], [r['ID'] for r in mine], mine)
        self.assertEqual({member_project}, {r['Project'] for r in mine})
        self.assertEqual([kept['id']], [r['ID'] for r in self.openstack(
            'gpu', 'server', 'list', '--project', member_project,
            '--pool', vgpu_pool)])
        rc, _out, err = self.openstack_raw(
            'gpu', 'server', 'list', '--all-projects',
            cloud=self.member_cloud)
        self.assertEqual(1, rc)
        self.assertIn('--all-projects needs admin', err)
        rc, _out, err = self.openstack_raw(
            'gpu', 'usage', 'list', '--start', _iso(start), '--project',
            admin_project, cloud=self.member_cloud)
        self.assertEqual(1, rc)
        self.assertIn('your own project', err)

        # Nova's termination time lies between these two
        deleting = datetime.datetime.now(datetime.timezone.utc)
        self.openstack('server', 'delete', '--wait', gone['id'],
                       parse=False)
        deleted = datetime.datetime.now(datetime.timezone.utc)
        end = datetime.datetime.now(datetime.timezone.utc)

        def hours(server, until=end):
            began = _utc(server['OS-SRV-USG:launched_at'])
            return (until - began).total_seconds() / 3600.0

        # by flavor (this test's own flavors): other servers on the same
        # pool hosts, booted by other tests, cannot blur the figures
        rows = self.openstack(
            'gpu', 'usage', 'list', '--start', _iso(start), '--end',
            _iso(end), '--by', 'project', '--by', 'pool', '--by', 'flavor',
            '--rate', 'VGPU=3')
        found = {(r['Project'], r['Pool']): r for r in rows
                 if r['Flavor'] in (pt_flavor, vgpu_flavor)}
        self.assertEqual({(admin_project, pt_pool),
                          (admin_project, vgpu_pool),
                          (member_project, vgpu_pool)}, set(found))
        self.assert_hours(2 * hours(pt), found[admin_project, pt_pool][
            'GPU Hours'], gpus=2)
        self.assert_hours(hours(gone, deleting),
                          found[admin_project, vgpu_pool]['GPU Hours'],
                          latest=hours(gone, deleted))
        self.assert_hours(hours(kept),
                          found[member_project, vgpu_pool]['GPU Hours'])
        self.assertEqual(0, found[admin_project, pt_pool]['Cost'])
        self.assert_hours(3 * hours(kept),
                          found[member_project, vgpu_pool]['Cost'], gpus=3)
        # seats: the two vGPU servers overlapped; passthrough needs none
        by_pool = {r['Pool']: r for r in self.openstack(
            'gpu', 'usage', 'list', '--start', _iso(start), '--end',
            _iso(end), '--by', 'pool', '--pool', vgpu_pool)}
        self.assertEqual([vgpu_pool], list(by_pool))
        self.assertEqual(2, by_pool[vgpu_pool]['Peak Seats'])
        self.assertEqual(2, by_pool[vgpu_pool]['Servers'])
        self.assertEqual(0, found[admin_project, pt_pool]['Peak Seats'])
        # the member's view: own project only, same figure
        mine = self.openstack('gpu', 'usage', 'list', '--start',
                              _iso(start), '--end', _iso(end), '--by',
                              'project', '--by', 'flavor',
                              cloud=self.member_cloud)
        self.assertEqual({member_project}, {r['Project'] for r in mine})
        # without --start: the last four weeks, as openstack usage list,
        # which hold this test's servers
        recent = {r['Flavor'] for r in self.openstack(
            'gpu', 'usage', 'list', '--by', 'flavor')}
        self.assertEqual(set(), {pt_flavor, vgpu_flavor} - recent)
        mine = [r for r in mine if r['Flavor'] == vgpu_flavor]
        self.assertEqual(1, len(mine))
        self.assert_hours(hours(kept), mine[0]['GPU Hours'])
