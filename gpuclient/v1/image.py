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

"""``openstack gpu image set/show``."""

import logging

from osc_lib.cli import format_columns
from osc_lib.command import command

from gpuclient import flavor_ops
from gpuclient import images
from gpuclient.i18n import _
from gpuclient.v1 import pool as pool_cmd

LOG = logging.getLogger(__name__)


class SetImage(command.Command):
    _description = _(
        'Prepare an image for GPU guests: q35 machine type and UEFI '
        'firmware (large PCI BARs), optionally secure boot and a hidden '
        'hypervisor id')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('image', metavar='<image>',
                            help=_('Image to modify (name or ID)'))
        parser.add_argument(
            '--no-q35', dest='q35', action='store_false', default=True,
            help=_('Do not set hw_machine_type=q35 (and remove a q35 '
                   'machine type that is set)'))
        parser.add_argument(
            '--no-uefi', dest='uefi', action='store_false', default=True,
            help=_('Do not set hw_firmware_type=uefi (and remove UEFI '
                   'firmware that is set)'))
        parser.add_argument(
            '--secure-boot', action='store_true', default=False,
            help=_('Require secure boot (os_secure_boot=required); needs '
                   'q35 and UEFI'))
        parser.add_argument(
            '--hide-hypervisor-id', action='store_true', default=False,
            help=_('Hide the hypervisor from the guest '
                   '(img_hide_hypervisor_id=true), for guest drivers that '
                   'refuse to run in a VM; removes the misspelt '
                   'hw_hide_hypervisor_id'))
        pool_cmd.add_dry_run_arg(parser)
        return parser

    def take_action(self, parsed_args):
        client = self.app.client_manager.gpu
        plan = flavor_ops.set_image(
            client, parsed_args.image, dry_run=parsed_args.dry_run,
            q35=parsed_args.q35, uefi=parsed_args.uefi,
            secure_boot=parsed_args.secure_boot,
            hide_hypervisor_id=parsed_args.hide_hypervisor_id)
        if parsed_args.dry_run:
            pool_cmd.write_plan(self.app, plan)
        elif not plan:
            LOG.info(_('Image %s already has these properties: nothing to '
                       'do.'), parsed_args.image)


class ShowImage(command.ShowOne):
    _description = _(
        'Show the GPU-relevant properties of an image (machine type, '
        'firmware, secure boot, hidden hypervisor id) and what is missing '
        'or contradictory')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('image', metavar='<image>',
                            help=_('Image to display (name or ID)'))
        return parser

    def take_action(self, parsed_args):
        glance = self.app.client_manager.gpu.image
        image = glance.find_image(parsed_args.image)
        properties, ready, warnings = images.report(image)
        columns = ('id', 'name') + images.PROPERTIES + (
            images.WRONG_HIDE_ID, 'gpu_ready', 'warnings')
        values = (image.get('id'), image.get('name')) + tuple(
            properties[key] for key in images.PROPERTIES) + (
            image.get(images.WRONG_HIDE_ID), ready,
            format_columns.ListColumn(warnings))
        return columns, values
