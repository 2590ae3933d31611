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


"""Every microversion the client layer sends, named by what needs it.

Each call names its microversion explicitly (never a negotiated or
configured default), so what a call needs is written here once.

``--os-compute-api-version`` (or clouds.yaml's ``compute_api_version``)
given lower than what a Nova call needs refuses the call before it is
sent (``cloud.compute``); given higher, the pinned version is still sent
(the answers gpuclient reads change shape at later microversions: 2.69
partial servers, 2.75 flavor fields, 2.88 hypervisor fields) and a
warning says so once.
"""

import re

# -- Placement (tuples: compared with the endpoint's maximum) -------------
# one provider's inventories, usages and allocations: in every Placement
PLACEMENT_BASE_VERSION = (1, 0)
# GET /resource_classes (the resource class API came with 1.2)
PLACEMENT_CLASSES_VERSION = (1, 2)
# the traits API: GET/PUT/DELETE /traits, a provider's traits
PLACEMENT_TRAITS_VERSION = (1, 6)
# GET /usages?project_id= (a project's usage, what unified limits count)
PLACEMENT_USAGES_VERSION = (1, 9)
# parent/root provider uuids in provider lists (trees)
PLACEMENT_TREE_VERSION = (1, 14)
# GET /resource_providers?required= (providers with a trait)
PLACEMENT_REQUIRED_VERSION = (1, 18)
# a provider's aggregates with its generation (safe read-modify-write)
PLACEMENT_AGGREGATES_VERSION = (1, 19)
# whole-tree provider summaries in allocation-candidates answers
PLACEMENT_SUMMARY_VERSION = (1, 29)
# what Nova 34's scheduler sends for allocation candidates
PLACEMENT_NOVA_VERSION = (1, 36)

# -- Nova (strings: sent as they are) --------------------------------------
# paged os-simple-tenant-usage (tenant_usage(s)_links)
COMPUTE_USAGE_LINKS_VERSION = '2.40'
# the embedded flavor, extra specs included, in server bodies
COMPUTE_EMBEDDED_FLAVOR_VERSION = '2.47'
# hypervisor id == root resource provider uuid
COMPUTE_HYPERVISOR_UUID_VERSION = '2.53'
# extra_specs (and descriptions, 2.55) inline in flavor bodies and lists
COMPUTE_FLAVOR_SPECS_VERSION = '2.61'
# a cold migration to a named host (2.56); server moves (live migration
# with a host and block_migration auto, confirm, shelve) are sent at it
COMPUTE_MIGRATE_HOST_VERSION = '2.56'
# paged migration lists, with the migration uuid (2.59)
COMPUTE_MIGRATIONS_VERSION = '2.59'

# what each pinned compute microversion is for, in the refusal of a lower
# --os-compute-api-version
COMPUTE_NEEDS = {
    COMPUTE_USAGE_LINKS_VERSION: 'paged server usage',
    COMPUTE_EMBEDDED_FLAVOR_VERSION: 'the flavor embedded in servers',
    COMPUTE_HYPERVISOR_UUID_VERSION: 'hypervisor ids as provider uuids',
    COMPUTE_FLAVOR_SPECS_VERSION: 'flavor extra specs inline',
    COMPUTE_MIGRATE_HOST_VERSION: 'migrating a server to a named host',
    COMPUTE_MIGRATIONS_VERSION: 'paged migration lists',
}

# -- Ironic ----------------------------------------------------------------
# node traits in GET /nodes?fields=
BAREMETAL_TRAITS_VERSION = '1.37'


def version_str(version):
    return '%d.%d' % version


def parse_version(text):
    """'1.36' -> (1, 36); None when the text is not a microversion."""
    match = re.fullmatch(r'v?(\d+)\.(\d+)', str(text or '').strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2))
