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

extensions = [
    'openstackdocstheme',
    'reno.sphinxext',
]
source_suffix = '.rst'
master_doc = 'index'
project = 'gpuclient Release Notes'
copyright = '2026, gpuclient developers'
exclude_patterns = []
# the same theme as doc/source; release notes are not versioned (reno lists
# every release on one page)
html_theme = 'openstackdocs'
openstackdocs_repo_name = 'openstack/gpuclient'
openstackdocs_auto_name = False
release = ''
version = ''
