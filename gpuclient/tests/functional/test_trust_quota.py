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

"""Issue 21, defects 3 and 4: what other projects get, and secrets.

* ``gpu quota set --project`` needs a registered limit (Keystone keeps a
  project limit only under one), which is every other project's default:
  it is planned from nova-api's ``[quota] unified_limits_resource_strategy``
  so that the others keep what Nova gives them, and the plan says so. The
  proof is what Keystone then holds (plain ``openstack registered limit
  list`` / ``limit list``).
* A failed write's re-run hint carries no secret: the password given as an
  abbreviated option and the userinfo of the auth URL are left out.

Each test uses a resource class of its own (CUSTOM_GPU_FT<hex>): no other
test sees its registered limit.
"""

import os
import urllib.parse
import uuid

import fixtures

from gpuclient.rules import pools
from gpuclient.tests.functional import base
from gpuclient.tests.functional import test_flavor

# the test cloud's nova.conf (tools/testcloud renders it there); another
# cloud's can be named with GPUCLIENT_FT_NOVA_CONF
NOVA_CONF = os.environ.get(
    'GPUCLIENT_FT_NOVA_CONF',
    os.path.join(os.environ.get('GPUCLIENT_TESTCLOUD_HOME',
                                '/var/tmp/gpuclient-testcloud'),
                 'state', 'etc', 'nova', 'nova.conf'))


class TestQuotaOtherProjects(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.classes = []
        self.addCleanup(self.forget)

    def resource_class(self):
        rc = 'CUSTOM_GPU_FT%s' % uuid.uuid4().hex[:10].upper()
        self.classes.append('class:' + rc)
        return rc

    def forget(self):
        """Delete every limit on this test's classes, then their
        registered limits (plain OSC; Keystone refuses the other order)."""
        for kind in (('limit',), ('registered', 'limit')):
            ids = [row['ID'] for row in self.openstack(*kind, 'list')
                   if row['Resource Name'] in self.classes]
            if ids:
                self.openstack(*kind, 'delete', *ids, parse=False)

    def keystone(self):
        """({resource name: default limit}, {resource name: {project id:
        limit}}) of this test's classes, as Keystone holds them."""
        registered = {row['Resource Name']: row['Default Limit']
                      for row in self.openstack('registered', 'limit',
                                                'list')
                      if row['Resource Name'] in self.classes}
        limits = {}
        for row in self.openstack('limit', 'list'):
            if row['Resource Name'] in self.classes:
                limits.setdefault(row['Resource Name'], {})[
                    row['Project ID']] = row['Resource Limit']
        return registered, limits

    def test_registered_limit_follows_the_strategy(self):
        """Under ``ignore`` (a class without a registered limit is 0 for
        every project) the registered limit created is 0; under the
        cloud's own nova.conf (Nova's default ``require``: unlimited) it
        is -1. Other projects keep what Nova gave them, and --dry-run
        shows the registered-limit step saying so; without --nova-conf
        the plan says what it assumed."""
        if not os.path.isfile(NOVA_CONF):
            self.skipTest('the cloud\'s nova.conf (%s) is not readable: set '
                          'GPUCLIENT_FT_NOVA_CONF' % NOVA_CONF)
        # project A: the current one (the classes are this test's own: no
        # other test sees their limits)
        project = self.openstack('token', 'issue')['project_id']
        ignore = self.useFixture(fixtures.TempDir()).join('ignore.conf')
        with open(ignore, 'w') as f:
            f.write('[quota]\nunified_limits_resource_strategy = ignore\n')
        under_ignore, under_cloud, assumed = (
            self.resource_class() for _ in range(3))

        def quota_set(index, rc, *extra):
            # the first call runs the real executable, the others the same
            # shell in this process (openstack_matrix)
            code, out, err = self.openstack_matrix(
                index, 'gpu', 'quota', 'set', '--project', project,
                '--resource-class', rc, '--gpus', '2', *extra)
            self.assertEqual(0, code, err)
            return out, err

        ignore_args = ('--nova-conf', NOVA_CONF, '--nova-conf', ignore)
        out, err = quota_set(0, under_ignore, *ignore_args, '--dry-run')
        lines = out.splitlines()
        self.assertEqual(2, len(lines), out)
        self.assertTrue(lines[0].startswith(
            '1. set the registered limit class:%s to 0 (every project '
            'without its own limit keeps what Nova gives it now: 0 GPUs; '
            '[quota] unified_limits_resource_strategy = ignore, '
            'unified_limits_resource_list = servers, read from the '
            'nova.conf given)' % under_ignore), lines[0])
        self.assertIn('creates it at 0', err)
        quota_set(1, under_ignore, *ignore_args)
        quota_set(2, under_cloud, '--nova-conf', NOVA_CONF)
        out, err = quota_set(3, assumed, '--dry-run')
        self.assertTrue(out.startswith(
            '1. set the registered limit class:%s to -1 (every project '
            'without its own limit keeps what Nova gives it now: unlimited; '
            "assumed Nova's defaults: [quota] unified_limits_resource_"
            'strategy = require, unified_limits_resource_list = servers; no '
            '--nova-conf given)' % assumed), out)
        # Keystone: the project's own limit, and the registered limit the
        # plan named (the default of every other project, none of which
        # has a limit of its own: they get what Nova gave them before);
        # the dry runs wrote nothing
        registered, limits = self.keystone()
        self.assertEqual({'class:' + under_ignore: 0,
                          'class:' + under_cloud: -1}, registered)
        self.assertEqual({'class:' + under_ignore: {project: 2},
                          'class:' + under_cloud: {project: 2}}, limits)


class TestRerunHintSecrets(test_flavor.GpuFlavorTestCase):

    def test_failed_write_names_no_secret(self):
        """Nova's policy denies the flavor operator extra specs: gpu
        flavor create fails at its second step, and the error's re-run
        hint is the command less the abbreviated password and the auth
        URL's userinfo (the command authenticated with both)."""
        cloud = test_flavor._clouds().get(test_flavor.OPERATOR_CLOUD)
        if not cloud:
            self.skipTest('cloud %s is not in clouds.yaml'
                          % test_flavor.OPERATOR_CLOUD)
        password = cloud['auth']['password']
        url = urllib.parse.urlsplit(cloud['auth']['auth_url'])
        url_secret = 'UrlPw%s' % uuid.uuid4().hex[:8]
        with_userinfo = url._replace(
            netloc='ftuser:%s@%s' % (url_secret, url.netloc)).geturl()
        pool = self.make_pool(pools.VGPU)
        name = self.unique_name('flavor')
        self.addCleanup(self.openstack_raw, 'flavor', 'delete', name)
        # '=' forms: the harness runs "openstack gpu ..." as the real
        # executable only when it sees the command word "gpu"
        rc, _out, err = self.openstack_raw(
            '--os-passw=%s' % password, '--os-auth-url=%s' % with_userinfo,
            'gpu', 'flavor', 'create', name, '--pool', pool,
            *test_flavor.SIZES, cloud=test_flavor.OPERATOR_CLOUD)
        self.assertEqual(1, rc, err)
        # authenticated (the password and URL were used), then failed
        self.assertIn('failed at step 2 of', err)
        self.assertIn('Fix the cause and run "openstack --os-cloud %s '
                      '--os-auth-url=%s gpu flavor create %s --pool %s'
                      % (test_flavor.OPERATOR_CLOUD, url.geturl(), name,
                         pool), err)
        for secret in (password, url_secret, 'ftuser', '--os-passw'):
            self.assertNotIn(secret, err)
