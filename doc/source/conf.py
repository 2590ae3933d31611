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

import os
import sys

# doc/source/_ext: this project's own Sphinx extensions (gpuclient_layers
# draws the floors of contributor/architecture from tools/layers.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '_ext'))

extensions = [
    'openstackdocstheme',
    'cliff.sphinxext',
    'gpuclient_layers',
    'gpuclient_model',
]

source_suffix = '.rst'
master_doc = 'index'
project = 'gpuclient'
copyright = '2026, gpuclient developers'
exclude_patterns = ['build']
pygments_style = 'native'

# openstackdocstheme, as OpenStack projects' docs: the "edit on opendev"
# links point at this repository (setup.cfg's home_page); the version comes
# from the installed package (pbr). No bug tracker link: the project's issues
# are not on Launchpad or StoryBoard, so bug_project stays unset.
html_theme = 'openstackdocs'
openstackdocs_repo_name = 'openstack/gpuclient'
openstackdocs_auto_name = False
openstackdocs_pdf_link = False

# autoprogram-cliff: the CLI reference is generated from the commands'
# own parsers (the entry points in setup.cfg).
autoprogram_cliff_application = 'openstack'

# A man page, openstack-gpu(1), built from the CLI reference by the docs
# environment (sphinx-build -b man; tox -e docs), as python-openstackclient
# builds openstack(1).
man_pages = [
    ('cli/index', 'openstack-gpu',
     'OpenStackClient plugin for GPU clouds: the openstack gpu commands',
     ['gpuclient developers'], 1),
]
