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

"""Pure: GPU partitions and ``gpu profile plan``.

The catalogue they are cut from (NVIDIA's MIG profiles, vGPU types,
boards and BAR1 windows) is ``gpuclient.rules.catalogue``, a floor below:
the address-space check and the nova.conf rendering read it too.

==============  ==========================================================
module          what it holds
==============  ==========================================================
``layouts``     a card's layouts: checked, enumerated, written out
``solver``      the plan: the layout of every card for a demand (HiGHS)
``scripts``     the ``nvidia-smi`` scripts of a plan (``--output-dir``)
``cloud``       the cards of a cloud's MIG and vgpu pools (``--pool``) and
                the nova.conf after a plan
``demand``      the demand of ``--from-usage``: peak and refused boots
``vf``          vgpu-vf pools: a vGPU type per SR-IOV VF
==============  ==========================================================

Where the numbers come from, why the plan is exact and how the fewest
moves are proven: doc/source/contributor/profiles.rst.
"""
